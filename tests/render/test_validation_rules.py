"""Schema validation of objects on hand-made inputs (no stack render).

Sources: the Kubernetes OpenAPI schema in strict mode (kubernetes-validate), and the CRD structural-schema rules
(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema):
unknown fields are pruned, so strict means refused, unless ``x-kubernetes-preserve-unknown-fields``;
``x-kubernetes-int-or-string`` takes an integer or a string; ``nullable`` takes null; a defaulted field counts as set.
"""

from __future__ import annotations

from typing import Any

import pytest

import render.validation
from render.chart import ChartObject
from render.engine import Render
from render.validation import ManifestError, _strict, custom_resources, kubernetes_version, unchecked_rules, validate, validate_render
from tests.render.registrations import registration

VERSION = "1.35"


def compute_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": {"name": "a4"}, "spec": spec}


def config_map(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, **fields}


def test_a_structural_schema_becomes_a_strict_json_schema() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "true"}],
        "required": ["port", "mode", "name"],
        "properties": {
            "port": {"x-kubernetes-int-or-string": True, "type": "string"},
            "mode": {"type": "string", "default": "a"},
            "name": {"type": "string", "nullable": True},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
            "map": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
            "list": {"type": "array", "items": [{"type": "object", "properties": {}}]},
            "any": {"nullable": True},
        },
    }
    assert _strict(schema) == {
        "type": "object",
        "required": ["port", "name"],
        "additionalProperties": False,
        "properties": {
            "port": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "mode": {"type": "string", "default": "a"},
            "name": {"type": ["string", "null"]},
            "free": {"type": "object", "properties": {"a": {"type": "string"}}},
            "map": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
            "list": {"type": "array", "items": [{"type": "object", "properties": {}, "additionalProperties": False}]},
            "any": {},
        },
    }


def test_every_vendored_crd_version_is_known_by_api_version_and_kind_with_metadata_left_to_the_api_server() -> None:
    table = custom_resources()
    compute = table[("cloud.google.com/v1", "ComputeClass")]
    assert compute.crd == "computeclasses.cloud.google.com/v1"
    assert compute.json_schema["properties"]["metadata"] == {"type": "object"}
    assert compute.json_schema["additionalProperties"] is False
    assert "x-kubernetes-validations" not in str(compute.json_schema)
    assert "x-kubernetes-validations" in str(compute.schema)
    assert table[("keda.sh/v1alpha1", "ScaledObject")].crd == "scaledobjects.keda.sh/v1alpha1"
    assert table[("gateway.networking.k8s.io/v1", "Gateway")].crd == "gateways.gateway.networking.k8s.io/v1"
    assert table[("gateway.networking.k8s.io/v1beta1", "Gateway")].crd == "gateways.gateway.networking.k8s.io/v1beta1"


def test_unchecked_rules_name_the_crd_the_path_the_rule_and_why() -> None:
    found = unchecked_rules()
    assert found == sorted(found)
    for line in found:
        crd, path, rest = line.split(" ", 2)
        assert crd.count("/") == 1 and path.endswith(":") and rest.startswith(("'", '"')), line
        assert rest.endswith(("does not compile", "which the CEL library lacks")), line


def test_a_core_object_is_checked_strictly_against_the_clusters_kubernetes_schema() -> None:
    assert validate(config_map(data={"a": "b"}), VERSION) == "Kubernetes 1.35"
    with pytest.raises(ManifestError, match=r"^ConfigMap/settings: data\.a: 1 is not of type 'string', 'null' \(Kubernetes 1\.35\)$"):
        validate(config_map(data={"a": 1}), VERSION)
    with pytest.raises(
        ManifestError, match=r"^ConfigMap/settings: \(root\): Additional properties .*'bogus' was unexpected.* \(Kubernetes 1\.35\)$"
    ):
        validate(config_map(bogus=1), VERSION)
    with pytest.raises(ManifestError, match=r"^ConfigMap/\?: "):
        validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "bogus": 1}, VERSION)


def test_a_kind_without_a_schema_is_refused_naming_where_to_vendor_it() -> None:
    with pytest.raises(ManifestError) as raised:
        validate({"apiVersion": "x.example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}, VERSION)
    assert str(raised.value) == "Thing/t: no schema for x.example.com/v1 Thing: vendor its CRD into render/vendor/schemas/crds"


def test_a_custom_object_is_checked_against_its_vendored_crd_then_its_cel_rules() -> None:
    priority = {"machineFamily": "a4", "gpu": {"type": "nvidia-b200", "count": 8}}
    assert validate(compute_class(priorities=[priority | {"spot": True}]), VERSION) == "CRD cloud.google.com/v1"
    with pytest.raises(ManifestError) as unknown:
        validate(compute_class(priorities=[priority], bogus=1), VERSION)
    assert str(unknown.value) == (
        "ComputeClass/a4: spec: Additional properties are not allowed ('bogus' was unexpected) (vendored CRD cloud.google.com/v1)"
    )
    # Of several schema errors, the one at the first path is named.
    with pytest.raises(ManifestError, match=r"^ComputeClass/a4: \(root\): "):
        validate({**compute_class(priorities=[priority], bogus=1), "extra": 1}, VERSION)
    with pytest.raises(ManifestError) as rule:
        validate(compute_class(priorities=[priority | {"spot": True, "flexStart": {"enabled": True}}]), VERSION)
    message = str(rule.value)
    assert message.startswith("ComputeClass/a4: spec.priorities.0: ")
    assert message.endswith(" of CRD computeclasses.cloud.google.com/v1)") and "(CEL rule '" in message


def cluster(version: str) -> Any:
    return registration("gcp:container/cluster:Cluster", "gke", {"minMasterVersion": version})


def test_the_kubernetes_version_is_the_clusters_minimum_control_plane_version() -> None:
    assert kubernetes_version(Render("dev", [cluster("1.34")])) == "1.34"


def test_a_render_validates_its_objects_and_its_charts_naming_the_chart_of_a_bad_one(monkeypatch: pytest.MonkeyPatch) -> None:
    own = registration("kubernetes:core/v1:ConfigMap", "settings", config_map(data={"a": "b"}))
    stack = Render("dev", [cluster("1.34"), own])
    charted = [ChartObject("chart keda (keda 2.20.2)", "keda", config_map(data={"c": "d"}))]
    monkeypatch.setattr(render.validation, "chart_objects", lambda given: charted if given is stack else [])
    assert validate_render(stack) == ["Kubernetes 1.34", "Kubernetes 1.34"]
    charted.append(ChartObject("chart keda (keda 2.20.2)", "keda", config_map(data={"c": 1})))
    with pytest.raises(ManifestError) as raised:
        validate_render(stack)
    assert str(raised.value) == (
        "ConfigMap/settings: data.c: 1 is not of type 'string', 'null' (Kubernetes 1.34) (rendered by chart keda (keda 2.20.2))"
    )
