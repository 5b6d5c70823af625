"""The vendored CRDs' CEL rules reject what the API server would reject on create, and pass what it accepts."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from components.benchmark import COMPUTE_CLASS as BENCHMARK_CLASS
from plan.stack import FALLBACK_CLASS
from render.engine import stack_settings
from render.files import manifests
from render.validation import ManifestError, unchecked_rules, validate, validate_render
from tests.conftest import render_with, rendered

VERSION = "1.35"


def rendered_object(stack: str, kind: str) -> dict[str, Any]:
    (found,) = [m for m in manifests(rendered(stack)) if m["kind"] == kind]
    return copy.deepcopy(found)


def compute_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cloud.google.com/v1", "kind": "ComputeClass", "metadata": {"name": "a4"}, "spec": spec}


def inference_pool(**spec: Any) -> dict[str, Any]:
    pool = {
        "selector": {"matchLabels": {"app": "vllm"}},
        "targetPorts": [{"number": 8000}],
        "endpointPickerRef": {"name": "vllm-epp", "port": {"number": 9002}},
    }
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "vllm", "namespace": "llm-serving"},
        "spec": pool | spec,
    }


def health_check_policy(default: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.gke.io/v1",
        "kind": "HealthCheckPolicy",
        "metadata": {"name": "vllm", "namespace": "llm-serving"},
        "spec": {"targetRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "vllm"}, "default": default},
    }


A4 = {"machineType": "a4-highgpu-8g", "gpu": {"type": "nvidia-b200", "count": 8}}


def test_a_valid_object_passes_its_crd_rules() -> None:
    assert validate(compute_class(priorities=[A4 | {"spot": True}], whenUnsatisfiable="DoNotScaleUp"), VERSION) == (
        "CRD cloud.google.com/v1"
    )
    assert validate(inference_pool(), VERSION) == "CRD inference.networking.k8s.io/v1"


def test_a_compute_class_priority_both_spot_and_flex_start_fails_with_the_rule_message() -> None:
    both = compute_class(priorities=[A4 | {"spot": True, "flexStart": {"enabled": True}}])
    with pytest.raises(ManifestError) as error:
        validate(both, VERSION)
    message = str(error.value)
    assert message.startswith("ComputeClass/a4: spec.priorities.0: Flex Start provisioning model is incompatible with Spot")
    assert "computeclasses.cloud.google.com/v1" in message


def test_a_rule_reads_a_dotted_property_by_its_escaped_name() -> None:
    # The rule says sysctls.net__dot__ipv4__dot__tcp_congestion_control for the key net.ipv4.tcp_congestion_control.
    sysctls = {"net.ipv4.tcp_congestion_control": "bbr"}
    on_autopilot = compute_class(
        priorities=[A4],
        autopilot={"enabled": True},
        nodePoolAutoCreation={"enabled": True},
        priorityDefaults={"nodeSystemConfig": {"linuxNodeConfig": {"sysctls": sysctls}}},
    )
    with pytest.raises(ManifestError, match=r"spec: Sysctl config net\.ipv4\.tcp_congestion_control cannot be set when Autopilot"):
        validate(on_autopilot, VERSION)


def test_transition_rules_are_skipped_on_create() -> None:
    # spec.autopilot carries `self == oldSelf`, which has no old object to read on create.
    assert validate(
        compute_class(priorities=[{"machineFamily": "c4"}], autopilot={"enabled": True}, nodePoolAutoCreation={"enabled": True}), VERSION
    )


def test_a_gateway_with_two_listeners_of_one_name_fails() -> None:
    gateway = rendered_object("gateway", "Gateway")
    gateway["spec"]["listeners"].append(gateway["spec"]["listeners"][0] | {"port": 8080})
    with pytest.raises(
        ManifestError, match=re.escape("Gateway/inference-gateway: spec.listeners: Listener name must be unique within the Gateway")
    ):
        validate(gateway, VERSION)


def test_an_http_route_to_a_service_without_a_port_fails_as_group_and_kind_default_to_a_service() -> None:
    route = rendered_object("gateway", "HTTPRoute")
    route["spec"]["rules"][0]["backendRefs"] = [{"name": "vllm"}]
    with pytest.raises(ManifestError, match=r"HTTPRoute/vllm: spec\.rules\.0\.backendRefs\.0: Must have port for Service reference"):
        validate(route, VERSION)


def test_route_parents_differ_by_namespace_a_keyword_the_rules_read_escaped() -> None:
    route = rendered_object("gateway", "HTTPRoute")
    parent = route["spec"]["parentRefs"][0]
    route["spec"]["parentRefs"] = [parent | {"namespace": "a"}, parent | {"namespace": "b"}]
    validate(route, VERSION)
    route["spec"]["parentRefs"][1]["namespace"] = "a"
    with pytest.raises(ManifestError, match=r"spec\.parentRefs: sectionName must be unique when parentRefs includes 2 or more"):
        validate(route, VERSION)


def test_an_inference_pool_with_a_repeated_target_port_fails() -> None:
    with pytest.raises(ManifestError, match=re.escape("InferencePool/vllm: spec.targetPorts: port number must be unique")):
        validate(inference_pool(targetPorts=[{"number": 8000}, {"number": 8000}]), VERSION)


def test_an_endpoint_picker_without_a_port_fails_as_its_kind_defaults_to_service() -> None:
    unported = inference_pool(endpointPickerRef={"name": "vllm-epp"})
    with pytest.raises(ManifestError) as error:
        validate(unported, VERSION)
    assert "spec.endpointPickerRef: port is required when kind is 'Service'" in str(error.value)
    assert "could not be evaluated" not in str(error.value)


def test_a_health_check_timeout_longer_than_its_interval_fails() -> None:
    slow = health_check_policy({"timeoutSec": 10, "checkIntervalSec": 5, "config": {"type": "HTTP", "httpHealthCheck": {}}})
    with pytest.raises(ManifestError, match=re.escape("HealthCheckPolicy/vllm: spec.default: timeOutSec cannot exceed checkIntervalSec")):
        validate(slow, VERSION)


def test_a_rule_that_reads_an_absent_field_fails_as_on_the_api_server() -> None:
    # What the inferencepool chart's HealthCheckPolicy sets: a port, no portSpecification.
    charted = health_check_policy({"config": {"type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": 8000}}})
    with pytest.raises(ManifestError, match="could not be evaluated: no such key: 'portSpecification'"):
        validate(charted, VERSION)


def test_durations_compare_as_durations_and_a_message_expression_falls_back_to_the_rule() -> None:
    monitoring = rendered_object("dev", "PodMonitoring")
    endpoint = monitoring["spec"]["endpoints"][0]
    endpoint |= {"interval": "30s", "timeout": "5s"}  # "5s" > "30s" as text
    validate(monitoring, VERSION)
    endpoint["timeout"] = "1m"
    with pytest.raises(ManifestError, match=re.escape("spec.endpoints.0: !has(self.timeout) || self.timeout <= self.interval")):
        validate(monitoring, VERSION)


def test_a_rule_the_library_cannot_evaluate_fails_the_object_rather_than_passing() -> None:
    monitoring = rendered_object("dev", "PodMonitoring")
    monitoring["spec"]["endpoints"][0]["proxyUrl"] = "http://proxy:3128"
    with pytest.raises(ManifestError, match="could not be evaluated: Undefined variable or function: 'isURL'"):
        validate(monitoring, VERSION)


def test_only_the_known_rules_cannot_be_checked_offline() -> None:
    # A new entry here is a rule the render no longer enforces: look at it before pinning it.
    assert unchecked_rules() == [
        "podmonitorings.monitoring.googleapis.com/v1 spec.endpoints[].oauth2.proxyUrl:"
        " \"isURL(self) && !self.matches('@')\" calls isURL, which the CEL library lacks",
        "podmonitorings.monitoring.googleapis.com/v1 spec.endpoints[].proxyUrl:"
        " \"isURL(self) && !self.matches('@')\" calls isURL, which the CEL library lacks",
    ]


@pytest.mark.parametrize("steps", [["reservation", "spot", "flex-start"], ["flex-start"]])
def test_every_stack_renders_compute_classes_that_pass_gke_crd_and_its_rules(stack: str, steps: list[str]) -> None:
    # The benchmark Job measures one model: a stack of several refuses it (stacks/settings.py).
    one_model = stack_settings(stack).models is None
    render = render_with(
        stack,
        capacity={"mode": "fallback", "fallback": steps, "reservation": {"name": "a4-reservation"}},
        benchmark={"enabled": one_model},
    )
    checked = zip(manifests(render), validate_render(render), strict=False)
    classes = {m["metadata"]["name"]: how for m, how in checked if m["kind"] == "ComputeClass"}
    assert classes == dict.fromkeys([FALLBACK_CLASS, *([BENCHMARK_CLASS] if one_model else [])], "CRD cloud.google.com/v1")
