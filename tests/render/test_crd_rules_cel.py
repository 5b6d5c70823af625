"""CEL rules of a CRD schema on hand-made schemas, as Kubernetes documents their evaluation (no stack render).

Source: Kubernetes' "Validation rules" of CustomResourceDefinitions
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules):
``self`` is the value where the rule is declared; a property name is escaped (``__`` -> ``__underscores__``,
``.`` -> ``__dot__``, ``-`` -> ``__dash__``, ``/`` -> ``__slash__``, a CEL keyword ``k`` -> ``__k__``); ``message``
or ``messageExpression`` replaces the rule in the error; transition rules (``oldSelf``) apply to updates only;
defaults are applied before validation.
"""

from __future__ import annotations

from typing import Any

import pytest

from render.crd_rules import Violation, declared_rules, violations, why_unchecked


def rule(text: str, **more: str) -> dict[str, str]:
    return {"rule": text, **more}


def obj(properties: dict[str, Any], *rules: dict[str, str], **more: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if rules:
        schema["x-kubernetes-validations"] = list(rules)
    return schema


STRING: dict[str, Any] = {"type": "string"}
INTEGER: dict[str, Any] = {"type": "integer"}


def test_declared_rules_name_the_path_of_each_rule_with_array_items_and_map_values() -> None:
    schema = obj(
        {
            "spec": obj(
                {
                    "ports": {"type": "array", "items": obj({"number": INTEGER}, rule("self.number > 0"))},
                    "labels": {
                        "type": "object",
                        "additionalProperties": {"type": "string", "x-kubernetes-validations": [rule("self != ''")]},
                    },
                },
                rule("has(self.ports)"),
            )
        },
        rule("true"),
    )
    assert [(path, found["rule"]) for path, found in declared_rules(schema)] == [
        ("(root)", "true"),
        ("spec", "has(self.ports)"),
        ("spec.ports[]", "self.number > 0"),
        ("spec.labels{}", "self != ''"),
    ]
    top_list = {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [rule("self > 0")]}}
    assert [path for path, _ in declared_rules(top_list)] == ["[]"]
    top_map = {"type": "object", "additionalProperties": {"type": "integer", "x-kubernetes-validations": [rule("self > 0")]}}
    assert [path for path, _ in declared_rules(top_map)] == ["{}"]
    # A boolean additionalProperties or items (allowed by the schema language) holds no rules.
    assert list(declared_rules({"type": "object", "additionalProperties": True, "items": True})) == []


def test_why_unchecked_tells_an_uncompilable_rule_and_a_missing_function_from_a_checkable_one() -> None:
    assert why_unchecked("self.a ==") == "does not compile"
    assert why_unchecked("self.a.matchesNothingKnown('x')") == "calls matchesNothingKnown, which the CEL library lacks"
    assert why_unchecked("size(self.a) > 1 && self.b.startsWith('x')") is None
    assert why_unchecked("self.a.split(',').size() == 2") is None  # the strings extension Kubernetes enables


def test_a_broken_rule_names_its_path_message_and_rule_and_a_kept_one_nothing() -> None:
    schema = obj({"spec": obj({"replicas": INTEGER}, rule("self.replicas <= 4", message="at most 4 replicas"))})
    assert violations(schema, {"spec": {"replicas": 4}}) == []
    assert violations(schema, {"spec": {"replicas": 5}}) == [Violation("spec", "at most 4 replicas", "self.replicas <= 4")]
    at_root = obj({"replicas": INTEGER}, rule("self.replicas <= 4"))
    assert violations(at_root, {"replicas": 5}) == [Violation("(root)", "self.replicas <= 4", "self.replicas <= 4")]


def test_a_rule_is_evaluated_on_each_item_of_a_list_and_each_value_of_a_map_with_their_paths() -> None:
    positive = {"type": "integer", "x-kubernetes-validations": [rule("self > 0", message="positive")]}
    schema = obj(
        {"spec": obj({"ports": {"type": "array", "items": positive}, "weights": {"type": "object", "additionalProperties": positive}})}
    )
    found = violations(schema, {"spec": {"ports": [1, 0, -1], "weights": {"a": 1, "b": 0}}})
    assert [(v.path, v.message) for v in found] == [
        ("spec.ports.1", "positive"),
        ("spec.ports.2", "positive"),
        ("spec.weights.b", "positive"),
    ]
    top = {"type": "array", "items": positive}
    assert [v.path for v in violations(top, [0, 1])] == ["0"]  # type: ignore[arg-type]


def test_a_rule_only_runs_where_its_value_is_present() -> None:
    schema = obj({"spec": obj({"port": {"type": "integer", "x-kubernetes-validations": [rule("self > 0")]}})})
    assert violations(schema, {"spec": {}}) == []
    assert violations(schema, {}) == []
    assert len(violations(schema, {"spec": {"port": 0}})) == 1
    # A field the schema does not declare is not descended into.
    assert violations(schema, {"spec": {"other": {"port": 0}}}) == []


@pytest.mark.parametrize(
    ("name", "escaped"),
    [
        ("a.b", "a__dot__b"),
        ("a-b", "a__dash__b"),
        ("a/b", "a__slash__b"),
        ("a__b", "a__underscores__b"),
        ("namespace", "__namespace__"),
        ("in", "__in__"),
        ("if", "__if__"),
        ("return", "__return__"),
    ],
)
def test_a_property_name_is_read_by_its_escaped_name(name: str, escaped: str) -> None:
    schema = obj({name: STRING}, rule(f"self.{escaped} == 'x'", message="must be x"))
    assert violations(schema, {name: "x"}) == []
    assert [v.message for v in violations(schema, {name: "y"})] == ["must be x"]


def test_every_cel_keyword_kubernetes_escapes_is_escaped() -> None:
    keywords = "true false null in as break const continue else for function if import let loop package namespace return var void while"
    for keyword in keywords.split():
        schema = obj({keyword: STRING}, rule(f"has(self.__{keyword}__)", message=keyword))
        assert violations(schema, {keyword: "x"}) == [], keyword


def test_an_undeclared_map_key_keeps_its_name() -> None:
    schema = {"type": "object", "additionalProperties": STRING, "x-kubernetes-validations": [rule("'a-b' in self", message="needs a-b")]}
    assert violations(schema, {"a-b": "x"}) == []
    assert [v.message for v in violations(schema, {"c": "x"})] == ["needs a-b"]


def test_defaults_are_filled_in_before_the_rules_run_at_every_depth() -> None:
    item = obj({"kind": {"type": "string", "default": "Service"}, "port": INTEGER}, rule("self.kind != 'Service' || has(self.port)"))
    schema = obj(
        {"spec": obj({"refs": {"type": "array", "items": item}, "mode": {"type": "string", "default": "a"}}, rule("self.mode == 'a'"))}
    )
    assert violations(schema, {"spec": {"refs": [{"port": 1}]}}) == []
    assert [v.path for v in violations(schema, {"spec": {"refs": [{"port": 1}, {}]}})] == ["spec.refs.1"]
    assert [v.path for v in violations(schema, {"spec": {"mode": "b"}})] == ["spec"]


def test_a_default_is_a_copy_each_object_gets_its_own() -> None:
    schema = obj({"tags": {"type": "array", "items": STRING, "default": ["x"]}})
    violations(schema, {})
    assert schema["properties"]["tags"]["default"] == ["x"]


def test_a_default_map_value_schema_fills_each_value() -> None:
    value = obj({"weight": {"type": "integer", "default": 1}}, rule("self.weight == 1", message="weight 1"))
    schema = {"type": "object", "additionalProperties": value}
    assert violations(schema, {"a": {}, "b": {"weight": 2}}) == [Violation("b", "weight 1", "self.weight == 1")]


def test_durations_and_timestamps_are_typed_and_a_malformed_one_stays_a_string() -> None:
    schema = obj(
        {
            "timeout": {"type": "string", "format": "duration"},
            "interval": {"type": "string", "format": "duration"},
            "after": {"type": "string", "format": "date-time"},
        },
        rule("!has(self.timeout) || self.timeout <= self.interval", message="timeout at most interval"),
        rule("!has(self.after) || self.after > timestamp('2020-01-01T00:00:00Z')", message="after 2020"),
    )
    # As strings "5s" > "10s"; as durations 5s < 10s.
    assert violations(schema, {"timeout": "5s", "interval": "10s"}) == []
    assert [v.message for v in violations(schema, {"timeout": "20s", "interval": "10s"})] == ["timeout at most interval"]
    assert violations(schema, {"after": "2024-05-01T00:00:00Z"}) == []
    assert [v.message for v in violations(schema, {"after": "2019-05-01T00:00:00Z"})] == ["after 2020"]
    (malformed,) = violations(schema, {"timeout": "soon", "interval": "10s"})
    assert malformed.message.startswith("timeout at most interval (the rule could not be evaluated: ")


def test_a_message_expression_is_used_when_it_gives_text_else_the_message_else_the_rule() -> None:
    spec = {"n": INTEGER}
    says = obj(spec, rule("self.n < 2", messageExpression="'n is ' + string(self.n)", message="fallback"))
    assert [v.message for v in violations(says, {"n": 3})] == ["n is 3"]
    empty = obj(spec, rule("self.n < 2", messageExpression="''", message="fallback"))
    assert [v.message for v in violations(empty, {"n": 3})] == ["fallback"]
    not_text = obj(spec, rule("self.n < 2", messageExpression="self.n", message="fallback"))
    assert [v.message for v in violations(not_text, {"n": 3})] == ["fallback"]
    failing = obj(spec, rule("self.n < 2", messageExpression="self.missing + 'x'", message="fallback"))
    assert [v.message for v in violations(failing, {"n": 3})] == ["fallback"]
    broken = obj(spec, rule("self.n < 2", messageExpression="'x' +"))
    assert [v.message for v in violations(broken, {"n": 3})] == ["self.n < 2"]


def test_a_rule_that_cannot_be_evaluated_fails_the_object_and_says_why() -> None:
    schema = obj({"a": INTEGER}, rule("self.b > 1", message="b above 1"))
    (absent,) = violations(schema, {"a": 1})
    assert absent.path == "(root)" and absent.rule == "self.b > 1"
    assert absent.message == "b above 1 (the rule could not be evaluated: no such key: 'b')"
    typed = obj({"a": STRING}, rule("self.a > 1", message="typed"))
    (wrong,) = violations(typed, {"a": "x"})
    assert wrong.message.startswith("typed (the rule could not be evaluated: ") and "no such key" not in wrong.message


def test_a_non_boolean_result_fails_the_rule() -> None:
    schema = obj({"a": INTEGER}, rule("self.a"))
    assert [v.rule for v in violations(schema, {"a": 1})] == ["self.a"]


def test_transition_and_uncompilable_rules_are_not_run_on_create() -> None:
    schema = obj({"a": INTEGER}, rule("self.a == oldSelf.a"), rule("self.a =="), rule("self.a > 5", message="above 5"))
    assert [v.message for v in violations(schema, {"a": 1})] == ["above 5"]
