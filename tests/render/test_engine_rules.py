"""The mock engine's runner on a hand-made project, and its helpers, without rendering the real stacks.

Sources: the Pulumi CLI hands a program its config as strings (objects as JSON, `secure:` values as secrets), keys
namespaced by the project's name (https://www.pulumi.com/docs/iac/concepts/config/); a stack file is
``Pulumi.<stack>.yaml`` with a ``config:`` map; GCP derives a service account's email from its id and project
(https://cloud.google.com/iam/docs/service-account-overview).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from render.engine import (
    Render,
    Secret,
    _cluster,
    _engine_config,
    _merged,
    _Mocks,
    _service_account,
    _stack_file,
    in_dependency_order,
    redact,
    render_stack,
    reveal,
    stack_config,
)
from stacks.problems import StackConfigError
from tests.render.registrations import registration

PROGRAM = """
import pulumi

config = pulumi.Config()
parent = pulumi.ComponentResource("test:index:Group", "group")
first = pulumi.CustomResource("test:index:Thing", "first", {"size": config.get_int("size"), "token": config.get_secret("token")},
                              opts=pulumi.ResourceOptions(parent=parent))
pulumi.CustomResource("test:index:Thing", "second", {"label": config.get("label"), "on": config.get_bool("on")},
                      opts=pulumi.ResourceOptions(depends_on=[first]))
pulumi.log.warn("careful")
pulumi.export("size", config.get_object("tags"))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: demo\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  demo:size: 3\n  demo:label: blue\n  demo:on: true\n  demo:tags: [a, b]\n")
    (tmp_path / "Pulumi.prod.yaml").write_text("config: {}\n")
    (tmp_path / "__main__.py").write_text(PROGRAM)
    return tmp_path


def test_a_stack_renders_its_registrations_outputs_and_warnings_in_dependency_order(project: Path) -> None:
    render = render_stack("dev", root=project, secrets={"token": "t0k"})
    assert render.stack == "dev"
    assert [(r.type, r.name) for r in render.resources] == [
        ("test:index:Group", "group"),
        ("test:index:Thing", "first"),
        ("test:index:Thing", "second"),
    ]
    first, second = render.resources[1], render.resources[2]
    assert first.inputs == {"size": 3, "token": Secret("t0k")}
    assert second.inputs == {"label": "blue", "on": True}
    assert render.depends_on(second, first) and render.find(first.urn) is first
    assert render.outputs == {"size": ["a", "b"]}
    assert render.warnings == ["careful"]


def test_a_render_takes_config_in_place_of_the_stack_file_and_fills_a_given_record(project: Path) -> None:
    record = Render("dev")
    returned = render_stack("dev", root=project, config={"demo:size": 5, "label": "red"}, record=record)
    assert returned is record
    assert record.one("test:index:Thing", "first").inputs["size"] == 5
    assert record.one("test:index:Thing", "second").inputs["label"] == "red"
    assert "token" not in record.one("test:index:Thing", "first").inputs  # no secret given: the program's get_secret is None


def test_a_stack_without_a_file_is_refused_naming_the_stacks_there(project: Path) -> None:
    assert stack_config("prod", project) == ("demo", {})
    with pytest.raises(FileNotFoundError) as raised:
        stack_config("qa", project)
    assert str(raised.value) == "no stack 'qa': Pulumi.qa.yaml does not exist; stacks here: dev, prod"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("config:\n  a: 1\n  a: 2\n", "Pulumi.x.yaml: key 'a' appears twice (lines 2 and 3)"),
        ("config: [\n", "Pulumi.x.yaml: is not valid YAML (line 2)"),
        ("- a\n", "Pulumi.x.yaml: is a list, not a mapping with a config: section"),
        ("config: [a]\n", "Pulumi.x.yaml: config is a list, not a mapping of keys to values"),
    ],
)
def test_a_stack_file_the_cli_would_refuse_fails_naming_it(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    with pytest.raises(StackConfigError) as raised:
        _stack_file(path)
    assert problem in str(raised.value)


def test_an_empty_stack_file_or_config_is_no_config(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("")
    assert _stack_file(path) == {}
    path.write_text("config:\n")
    assert _stack_file(path) == {}
    path.write_text("config:\n  a: 1\n")
    assert _stack_file(path) == {"a": 1}


def test_config_reaches_the_program_as_the_cli_hands_it() -> None:
    values, secret_keys = _engine_config(
        {"size": 3, "demo:label": "blue", "on": True, "off": False, "tags": ["a"], "other:key": {"a": 1}, "token": {"secure": "v1:abc"}},
        "demo",
    )
    assert values == {
        "demo:size": "3",
        "demo:label": "blue",
        "demo:on": "true",
        "demo:off": "false",
        "demo:tags": '["a"]',
        "other:key": '{"a": 1}',
        "demo:token": "[secret]",
    }
    assert secret_keys == ["demo:token"]
    assert _engine_config({"o": {"secure": "x", "b": 1}}, "demo") == ({"demo:o": '{"secure": "x", "b": 1}'}, [])


def test_secrets_are_revealed_for_assertions_and_redacted_keeping_their_shape() -> None:
    value = {"a": Secret("s"), "b": [Secret({"k": "v", "n": [1, 2]}), 3], "c": Secret(["x", "y"]), "d": Secret(Secret("z"))}
    assert reveal(value) == {"a": "s", "b": [{"k": "v", "n": [1, 2]}, 3], "c": ["x", "y"], "d": "z"}
    assert redact(value) == {
        "a": "[secret]",
        "b": [{"k": "[secret]", "n": ["[secret]", "[secret]"]}, 3],
        "c": ["[secret]", "[secret]"],
        "d": "[secret]",
    }


def resource_args(typ: str, name: str, inputs: dict[str, Any]) -> Any:
    """The fields of pulumi.runtime.MockResourceArgs the mocks read."""
    return SimpleNamespace(typ=typ, name=name, inputs=inputs)


def test_the_mock_provider_fills_what_gcp_computes() -> None:
    account = _service_account({"accountId": "runner", "project": "p1"})
    assert account == {
        "email": "runner@p1.iam.gserviceaccount.com",
        "member": "serviceAccount:runner@p1.iam.gserviceaccount.com",
        "name": "projects/p1/serviceAccounts/runner@p1.iam.gserviceaccount.com",
    }
    cluster = _cluster({"location": "europe-west4"})
    assert cluster["endpoint"] == "192.0.2.10"
    assert cluster["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["endpoint"].endswith(".europe-west4.gke.goog")
    assert cluster["masterAuth"]["clusterCaCertificate"]
    mocks = _Mocks()
    created = mocks.new_resource(resource_args("gcp:serviceaccount/account:Account", "sa", {"accountId": "a", "project": "p"}))
    assert created == ("sa-id", {"name": "sa", "accountId": "a", "project": "p", **_service_account({"accountId": "a", "project": "p"})})
    gateway = mocks.new_resource(resource_args("kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw", {"status": {"x": 1}}))
    assert gateway[1]["status"] == {"x": 1, "addresses": [{"type": "IPAddress", "value": "192.0.2.20"}]}
    assert mocks.new_resource(resource_args("test:index:Thing", "t", {"a": 1})) == ("t-id", {"name": "t", "a": 1})
    no_args: Any = SimpleNamespace()
    assert mocks.call(no_args) == ({}, [])


def test_computed_values_merge_into_the_inputs_map_by_map() -> None:
    base = {"a": {"b": 1, "c": 2}, "d": 1}
    assert _merged(base, {"a": {"c": 3, "e": 4}, "d": {"x": 1}}) == {
        "a": {"b": 1, "c": 3, "e": 4},
        "d": {"x": 1},
    }


def test_resources_are_ordered_after_their_parent_and_dependencies_ties_by_urn() -> None:
    c = registration("t:i:T", "c", {})
    b = registration("t:i:T", "b", {}, dependencies=(c.urn,))
    a = registration("t:i:T", "a", {}, parent=b.urn, dependencies=("urn:elsewhere",))
    d = registration("t:i:T", "d", {})
    # Whatever the arrival order: the first ready URN each time (c before d, then b, then a, then d).
    assert [r.name for r in in_dependency_order([a, b, c, d])] == ["c", "b", "a", "d"]
    assert [r.name for r in in_dependency_order([d, a, b, c])] == ["c", "b", "a", "d"]
    e = registration("t:i:T", "e", {}, dependencies=(registration("t:i:T", "f", {}).urn,))
    f = registration("t:i:T", "f", {}, dependencies=(e.urn,))
    with pytest.raises(ValueError, match=r"^dependency cycle among: urn:\S+::e, urn:\S+::f$"):
        in_dependency_order([c, e, f])


def test_one_resource_of_a_type_is_found_or_the_count_is_named() -> None:
    render = Render("dev", [registration("t:i:T", "a", {}), registration("t:i:T", "b", {})])
    assert render.one("t:i:T", "b").name == "b"
    with pytest.raises(LookupError, match=r"^expected one t:i:T , found 2$"):
        render.one("t:i:T")
    with pytest.raises(LookupError, match=r"^expected one t:i:U x, found 0$"):
        render.one("t:i:U", "x")
    assert render.find("urn:none") is None


def test_waiting_on_a_component_waits_on_everything_inside_it() -> None:
    group = registration("t:i:Group", "g", {}, custom=False)
    inner = registration("t:i:T", "inner", {}, parent=group.urn)
    deeper = registration("t:i:T", "deeper", {}, dependencies=(inner.urn,))
    later = registration("t:i:T", "later", {}, dependencies=(group.urn,))
    loop = registration("t:i:T", "loop", {}, dependencies=(later.urn, later.urn))
    render = Render("dev", [group, inner, deeper, later, loop])
    assert render.depends_on(later, inner) and render.depends_on(loop, inner)
    assert not render.depends_on(inner, later) and not render.depends_on(later, deeper)
    assert not render.depends_on(later, registration("t:i:T", "x", {}))
