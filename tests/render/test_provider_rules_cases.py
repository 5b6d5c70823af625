"""The provider checker on hand-made rules and inputs, as the Terraform plugin SDK applies them (no stack render).

Sources: terraform-plugin-sdk v2 ``helper/schema`` (``schemaMap.validate``: a nested field is checked only inside
a set block; ExactlyOneOf, AtLeastOneOf, ConflictsWith, RequiredWith by absolute key; unknown values skipped),
``helper/validation`` (StringInSlice, IntBetween, StringLenBetween, StringMatch, IsRFC3339Time, IsCIDRNetwork)
and Go's ``net.ParseCIDR`` and ``time.Parse(time.RFC3339)``.
"""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import Render, Secret
from render.provider_rules import ProviderConstraintError, check_provider, invalid, lookup, provider_problems, resource_problems
from render.sdk import UNKNOWN
from tests.render.registrations import registration

THING = "gcp:example/thing:Thing"


def problems(fields: dict[str, Any], **inputs: Any) -> list[str]:
    return resource_problems(registration(THING, "thing", inputs), {"source": "thing.go", "fields": fields})


def test_lookup_follows_maps_and_list_indexes_and_tells_absent() -> None:
    inputs = {"a": {"b": [{"c": 1}, {"c": 2}]}, "n": None}
    assert lookup(inputs, "a.b.1.c") == 2
    assert lookup(inputs, "a.b.0") == {"c": 1}
    assert lookup(inputs, "n") is None
    absent = lookup(inputs, "x")
    assert lookup(inputs, "a.b.2.c") is absent and lookup(inputs, "a.b.c") is absent and lookup(inputs, "a.b.0.c.d") is absent
    assert absent is not None


def test_a_problem_names_type_resource_field_value_problem_and_source() -> None:
    assert problems({"size": {"validate": {"range": {"min": 1, "max": 4}}}}, size=5) == [
        f"{THING} thing: size = 5: is outside 1..4 (thing.go)"
    ]
    assert problems({"size": {"validate": {"range": {"min": 1, "max": 4}}}}, size=4) == []


def test_a_required_nested_field_is_required_only_inside_a_set_block() -> None:
    fields = {"window.start": {"required": True}, "name": {"required": True}}
    assert problems(fields) == []  # no window block; a top-level required input is the SDK's to refuse
    assert problems(fields, window={"start": "x"}) == []
    assert problems(fields, window={"end": "y"}) == [f"{THING} thing: window.start: required: must be set (thing.go)"]
    assert problems(fields, window=[{"start": "x"}, {"end": "y"}]) == [f"{THING} thing: window[1].start: required: must be set (thing.go)"]


def test_exactly_one_of_wants_one_of_its_group() -> None:
    fields = {"policy.a": {"exactlyOneOf": ["policy.b"]}, "policy.b": {"exactlyOneOf": ["policy.a"]}}
    assert problems(fields, policy={"a": 1}) == []
    assert problems(fields, policy={"b": 1}) == []
    (none,) = problems(fields, policy={"c": 1})
    assert none == f"{THING} thing: policy: exactlyOneOf: one of policy.a, policy.b must be set, none is (thing.go)"
    (both,) = problems(fields, policy={"a": 1, "b": 2})
    assert both == f"{THING} thing: policy: exactlyOneOf: only one of policy.a, policy.b may be set, policy.a, policy.b are (thing.go)"
    # An empty block list is not set; a value not known yet may be the one.
    assert len(problems(fields, policy={"a": []})) == 1
    assert problems(fields, policy={"a": UNKNOWN}) == []
    assert problems(fields, policy={"a": None}) == []


def test_at_least_one_of_wants_one_and_allows_more() -> None:
    fields = {"addons.a": {"atLeastOneOf": ["addons.b"]}}
    assert problems(fields, addons={"a": 1, "b": 2}) == []
    assert problems(fields, addons={"b": 2}) == []
    assert problems(fields, addons={}) == [
        f"{THING} thing: addons: atLeastOneOf: one of addons.a, addons.b must be set, none is (thing.go)"
    ]
    top = {"a": {"atLeastOneOf": ["b"]}}
    assert problems(top) == [f"{THING} thing: (inputs): atLeastOneOf: one of a, b must be set, none is (thing.go)"]


def test_conflicts_with_and_required_with_apply_only_when_the_field_is_set() -> None:
    fields = {"cidr": {"conflictsWith": ["policy", "other"], "requiredWith": ["name", "zone"]}}
    assert problems(fields) == []
    assert problems(fields, cidr="", policy={"x": 1}, name="n", zone="z") == [
        f"{THING} thing: cidr = '': conflictsWith: cidr is set, so policy must not be (thing.go)"
    ]
    assert problems(fields, cidr=[], policy={"x": 1}) == []  # an empty block list is not set
    assert problems(fields, cidr=UNKNOWN, policy={"x": 1}) == []
    assert problems(fields, cidr="10.0.0.0/8", policy=[], name="n", zone="z") == []
    assert problems(fields, cidr="10.0.0.0/8", name=None) == [
        f"{THING} thing: cidr = '10.0.0.0/8': requiredWith: cidr is set, so zone must be too (thing.go)"
    ]


def test_items_bounds_and_item_validators() -> None:
    fields = {"tags": {"maxItems": 2, "minItems": 1, "items": {"enum": ["a", "b"]}}}
    assert problems(fields, tags=["a", "b"]) == []
    assert problems(fields, tags=["a", "b", "a"]) == [f"{THING} thing: tags: maxItems: has 3 items, at most 2 (thing.go)"]
    assert problems(fields, tags=[]) == []  # an empty list is not set
    assert problems({"tags": {"minItems": 2}}, tags=["a"]) == [f"{THING} thing: tags: minItems: has 1 items, at least 2 (thing.go)"]
    assert problems(fields, tags=["c", UNKNOWN]) == [f"{THING} thing: tags[0] = 'c': is not one of 'a', 'b' (thing.go)"]
    assert problems({"tags": {"validate": {"enum": ["a"]}}}, tags=["c"]) == []  # a list's validator is per item


def test_a_repeated_problem_is_listed_once_and_a_value_shown_only_when_plain() -> None:
    fields = {
        "policy.a": {"exactlyOneOf": ["policy.b"]},
        "policy.b": {"exactlyOneOf": ["policy.a"]},
        "block": {"validate": {"enum": ["x"]}},
    }
    assert problems(fields, policy={}, block={"k": 1}) == [
        f"{THING} thing: policy: exactlyOneOf: one of policy.a, policy.b must be set, none is (thing.go)"
    ]


def test_a_secret_is_checked_as_its_value() -> None:
    assert problems({"size": {"validate": {"range": {"min": 1, "max": 4}}}}, size=Secret(9)) == [
        f"{THING} thing: size = 9: is outside 1..4 (thing.go)"
    ]


@pytest.mark.parametrize(
    ("rule", "value", "reason"),
    [
        ({"enum": ["RAPID", "STABLE"]}, "rapid", "is not one of 'RAPID', 'STABLE'"),
        ({"enum": ["RAPID", "STABLE"], "ignoreCase": True}, "rapid", None),
        ({"enum": ["RAPID", "STABLE"], "ignoreCase": True}, "fast", "is not one of 'RAPID', 'STABLE'"),
        ({"enum": ["RAPID"]}, "RAPID", None),
        ({"enum": ["RAPID"]}, "", "is not one of 'RAPID'"),
        ({"enum": ["RAPID"], "allowEmpty": True}, "", None),
        ({"range": {"min": 10, "max": None}}, 9, "is outside 10.."),
        ({"range": {"min": 10, "max": None}}, 10, None),
        ({"range": {"min": None, "max": 5}}, 6, "is outside ..5"),
        ({"range": {"min": None, "max": 5}}, 5, None),
        ({"range": {"min": 1, "max": 5}}, 0.5, "is outside 1..5"),
        ({"range": {"min": 1, "max": 5}}, True, None),
        ({"length": {"min": 2, "max": 3}}, "a", "is not 2 to 3 characters long"),
        ({"length": {"min": 2, "max": 3}}, "abcd", "is not 2 to 3 characters long"),
        ({"length": {"min": 2, "max": 3}}, "abc", None),
        ({"length": {"min": 2, "max": 3}}, "ab", None),
        ({"pattern": "^[a-z]+$"}, "abc", None),
        ({"pattern": "^[a-z]+$"}, "ab1", "does not match ^[a-z]+$"),
        ({"pattern": "[0-9]"}, "a1b", None),
        ({"pattern": "^[a-z]+$"}, {"k": "1"}, None),
        ({"enum": ["x"]}, ["y"], None),
    ],
)
def test_each_validator(rule: dict[str, Any], value: Any, reason: str | None) -> None:
    assert invalid(rule, value) == reason


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("00:00", None),
        ("23:59", None),
        ("24:00", "is not an HH:MM time (00:00 to 23:59)"),
        ("12:60", "is not an HH:MM time (00:00 to 23:59)"),
        ("3:00", "is not an HH:MM time (00:00 to 23:59)"),
        ("03-00", "is not an HH:MM time (00:00 to 23:59)"),
        ("03:000", "is not an HH:MM time (00:00 to 23:59)"),
        ("ab:cd", "is not an HH:MM time (00:00 to 23:59)"),
        ("\u0660\u0663:\u0660\u0660", "is not an HH:MM time (00:00 to 23:59)"),  # Arabic-Indic digits: isdigit, not ASCII
    ],
)
def test_an_hh_mm_time(value: str, reason: str | None) -> None:
    assert invalid({"rfc3339": "HH:MM"}, value) == reason


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("2026-01-03T02:00:00Z", None),
        ("2026-01-03T02:00:00.5Z", None),
        ("2026-01-03T02:00:00+05:30", None),
        ("2026-01-03T02:00:00-23:59", None),
        ("2026-01-03T02:00Z", "is not an RFC 3339 date-time such as 2026-01-03T02:00:00Z"),
        ("2026-01-03T02:00:00", "is not an RFC 3339 date-time such as 2026-01-03T02:00:00Z"),
        ("x2026-01-03T02:00:00Z", "is not an RFC 3339 date-time such as 2026-01-03T02:00:00Z"),
        ("2026-01-03T02:00:00+05:30x", "is not an RFC 3339 date-time such as 2026-01-03T02:00:00Z"),
        ("2026-13-03T02:00:00Z", "is not a real instant (month must be in 1..12)"),
        ("2026-01-03T02:60:00Z", "is not a real instant (minute must be in 0..59)"),
        ("2026-01-03T02:00:00+24:00", "has a time-zone offset out of range"),
        ("2026-01-03T02:00:00+05:60", "has a time-zone offset out of range"),
    ],
)
def test_an_rfc3339_date_time(value: str, reason: str | None) -> None:
    assert invalid({"rfc3339": "date-time"}, value) == reason


NOT_CIDR = "is not an address/prefix-length CIDR range"
NOT_CANONICAL = "is not a network address in canonical form (expected {})"


@pytest.mark.parametrize(
    ("rule", "value", "reason"),
    [
        ({}, "10.0.0.5/24", None),  # ParseCIDR alone takes a host address
        ({}, "10.0.0.0", NOT_CIDR),
        ({}, "10.0.0.0/", NOT_CIDR),
        ({}, "10.0.0.0/+8", NOT_CIDR),
        ({}, "10.0.0.0/²", NOT_CIDR),
        ({}, "10.0.0.0/33", NOT_CIDR),
        ({}, "10.0.0.0/32", None),
        ({}, "fe80::%eth0/64", NOT_CIDR),
        ({}, "10.0.0.256/8", NOT_CIDR),
        ({}, "2001:db8::/128", None),
        ({}, "2001:db8::/129", NOT_CIDR),
        ({"network": True}, "10.0.0.5/24", NOT_CANONICAL.format("10.0.0.0/24")),
        ({"network": True}, "10.0.0.0/024", NOT_CANONICAL.format("10.0.0.0/24")),
        ({"network": True}, "10.0.0.0/24", None),
        ({"network": True, "minPrefix": 8, "maxPrefix": 28}, "10.0.0.0/29", "has a prefix length outside 8..28"),
        (
            {"network": True, "minPrefix": 8, "maxPrefix": 28},
            "11.0.0.0/7",
            NOT_CANONICAL.format("10.0.0.0/7"),
        ),
        ({"network": True, "minPrefix": 8, "maxPrefix": 28}, "0.0.0.0/7", "has a prefix length outside 8..28"),
        ({"network": True, "minPrefix": 8, "maxPrefix": 28}, "10.0.0.0/8", None),
        ({"network": True, "minPrefix": 8, "maxPrefix": 28}, "10.0.0.0/28", None),
        ({"network": True, "maxPrefix": 16}, "0.0.0.0/0", None),
        ({"network": True, "minPrefix": 8}, "2001:db8::/128", None),
        ({"network": True, "minPrefix": 8}, "2001:db8::/7", NOT_CANONICAL.format("2000::/7")),
    ],
)
def test_a_cidr_range(rule: dict[str, Any], value: str, reason: str | None) -> None:
    assert invalid({"cidr": rule}, value) == reason


def test_check_provider_lists_every_problem_or_counts_the_gcp_resources_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = {"fields": {"size": {"validate": {"range": {"min": 1, "max": 4}}}}, "source": "thing.go"}
    monkeypatch.setattr("render.provider_rules.constraints", lambda: {"resources": {THING: fields}})
    good = [registration(THING, "a", {"size": 1}), registration("kubernetes:core/v1:ConfigMap", "cm", {"size": 9})]
    assert provider_problems(Render("dev", good)) == []
    assert check_provider(Render("dev", good)) == 1
    bad = [*good, registration(THING, "b", {"size": 5}), registration(THING, "c", {"size": 0}), registration("gcpx:other:T", "d", {})]
    assert provider_problems(Render("dev", bad)) == [
        f"{THING} b: size = 5: is outside 1..4 (thing.go)",
        f"{THING} c: size = 0: is outside 1..4 (thing.go)",
    ]
    with pytest.raises(ProviderConstraintError) as raised:
        check_provider(Render("dev", bad))
    b, c = (f"{THING} {name}: size = {size}: is outside 1..4 (thing.go)" for name, size in (("b", 5), ("c", 0)))
    assert str(raised.value) == f"2 provider constraint problem(s):\n  - {b}\n  - {c}"
    unknown = registration("gcp:other/kind:Kind", "k", {})
    assert resource_problems(unknown) == [
        "gcp:other/kind:Kind k: no provider rules for this type; regenerate constraints/gcp.yaml (docs/provider.md)"
    ]
