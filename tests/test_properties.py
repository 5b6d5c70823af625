"""Property-based: every valid config renders and validates; every invalid one fails clearly, registering nothing."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from facts.gcp import PROJECT_RESTRICTED, bucket_name_problem
from facts.gke import B200_MIN_MINOR
from facts.naming import PROGRAM_LABELS
from render.engine import Render, render_stack
from render.validation import validate_render
from stacks.problems import StackConfigError
from stacks.serving import MANAGED_FLAGS
from stacks.settings import known_keys

# Derandomized in CI so a red build reproduces; random locally to keep finding new cases.
settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("local", max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "local")

ZONES = {"europe-west4": "europe-west4-b", "us-central1": "us-central1-b"}
LABEL_KEYS = st.from_regex(r"[a-z]([a-z0-9_-]{0,9}[a-z0-9])?", fullmatch=True).filter(lambda k: k not in PROGRAM_LABELS)
LABEL_VALUES = st.from_regex(r"([a-z0-9]([a-z0-9_-]{0,9}[a-z0-9])?)?", fullmatch=True)
CAPACITY_MODES = ("spot", "reservation", "flex-start", "fallback")
RESERVATION = {"name": "a4-llm-serving"}
# A reservation by name of a stated size, and a calendar-mode one the stack creates: a node for every replica a config may
# ask for, and a rollout's surge one.
CALENDAR = {"name": "a4-llm-serving", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z", "nodes": 80}


def _takes_project(name: str) -> bool:
    """A project id GCP takes: no restricted word, nothing Cloud Storage refuses in the buckets named after it."""
    return not any(word in name for word in PROJECT_RESTRICTED) and bucket_name_problem(name) is None


@st.composite
def capacities(draw: st.DrawFn) -> dict[str, Any]:
    mode = draw(st.sampled_from(CAPACITY_MODES))
    capacity: dict[str, Any] = {"mode": mode}
    if mode == "flex-start":
        capacity["flexStart"] = {"maxRunHours": draw(st.integers(1, 168))}
        capacity["pricePerNodeHour"] = draw(st.floats(1, 200))
    if mode == "fallback":
        capacity["fallback"] = draw(st.lists(st.sampled_from(["reservation", "spot", "flex-start"]), min_size=1, max_size=3, unique=True))
    if mode == "reservation" or "reservation" in capacity.get("fallback", []):
        named = [{"nodes": 80}, {"project": "shared-capacity", "nodes": 80}]
        capacity["reservation"] = {**RESERVATION, **draw(st.sampled_from([*named, {"create": CALENDAR}]))}
    return capacity


@st.composite
def drains(draw: st.DrawFn, capacity: dict[str, Any]) -> dict[str, int]:
    """A drain that fits its capacity: on Spot, the pause, the timeout and vLLM's 7 s of teardown within 25 s."""
    if capacity["mode"] == "spot" or "spot" in capacity.get("fallback", []):
        pre_stop = draw(st.integers(5, 18))
        return {"preStopSeconds": pre_stop, "shutdownTimeoutSeconds": draw(st.integers(0, 18 - pre_stop))}
    return {"preStopSeconds": draw(st.integers(5, 120)), "shutdownTimeoutSeconds": draw(st.integers(0, 3600))}


@st.composite
def autoscalings(draw: st.DrawFn) -> dict[str, Any]:
    if not draw(st.booleans()):
        return {"enabled": False}
    most = draw(st.integers(1, 16))
    return {"enabled": True, "maxReplicas": most, "minReplicas": draw(st.integers(0, most))}


@st.composite
def valid_configs(draw: st.DrawFn) -> dict[str, Any]:
    region = draw(st.sampled_from(sorted(ZONES)))
    input_tokens = draw(st.integers(16, 4096))
    output_tokens = draw(st.integers(16, 2048))
    ratio = draw(st.sampled_from([0.0, 0.25, 0.5]))
    longest = round(input_tokens * (1 + ratio) + 1) + round(output_tokens * (1 + ratio) + 1)
    routing = draw(st.sampled_from(["clusterip", "gateway"]))
    external = routing == "gateway" and draw(st.booleans())
    capacity = draw(capacities())
    config: dict[str, Any] = {
        "llm:project": draw(st.from_regex(r"[a-z][a-z0-9-]{4,20}[a-z0-9]", fullmatch=True).filter(_takes_project)),
        "llm:region": region,
        "llm:zone": ZONES[region],
        "llm:nodes": draw(st.integers(0, 16)),
        "llm:routing": routing,
        "llm:allowPublicExposure": external,
        "llm:capacity": capacity,
        "llm:cluster": {
            "version": f"1.{draw(st.integers(B200_MIN_MINOR, 37))}",
            "deletionProtection": draw(st.booleans()),
            "authorizedNetworks": draw(st.sampled_from([[], ["10.0.0.0/8"], ["192.168.0.0/16", "172.16.0.0/12"]])),
        },
        "llm:workload": {"inputTokens": input_tokens, "outputTokens": output_tokens, "rangeRatio": ratio},
        "llm:serving": {
            "maxModelLen": draw(st.integers(longest, longest + 8192)),
            "mtpTokens": draw(st.integers(0, 2)),
            "gpuMemoryUtilization": draw(st.sampled_from([0.8, 0.9, 0.92, 0.95])),
            "port": draw(st.integers(1024, 65535)),
        },
        "llm:cache": {"enabled": draw(st.booleans()), "downloadMethod": draw(st.sampled_from(["hf", "git-lfs"]))},
        "llm:gateway": {
            "exposure": "external" if external else "internal",
            "installCrds": draw(st.sampled_from(["auto", "always", "never"])),
            "chartVersion": draw(st.sampled_from(["v1.4.0", "v1.5.0"])),
        },
        "llm:autoscaling": draw(autoscalings()),
        "llm:benchmark": {"enabled": draw(st.booleans())},
        "llm:drain": draw(drains(capacity)),
        "llm:registry": {"enabled": draw(st.booleans())},
        "llm:labels": draw(st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=3)),
    }
    return config


@pytest.mark.long  # 20 renders
@given(valid_configs())
def test_every_valid_config_renders_and_validates(config: dict[str, Any]) -> None:
    render = render_stack("dev", config=config)
    assert render.one("gcp:container/cluster:Cluster")
    assert len(validate_render(render)) > 0


# (mutation of a valid config, the key the error must name)
def _unknown_key(name: str) -> dict[str, Any]:
    return {f"llm:{name}": "x"}


INVALID: list[tuple[st.SearchStrategy[dict[str, Any]], str]] = [
    (
        st.text(min_size=1).filter(lambda s: s not in ("true", "True", "false", "False")).map(lambda s: {"llm:allowPublicExposure": s}),
        "llm:allowPublicExposure",
    ),
    (st.sampled_from(PROGRAM_LABELS).map(lambda k: {"llm:labels": {k: "x"}}), "llm:labels"),
    (st.sampled_from(sorted(MANAGED_FLAGS)).map(lambda f: {"llm:serving": {"extraArgs": [f"{f}=1"]}}), "llm:serving.extraArgs"),
    (
        st.from_regex(r"(kube|gke|gmp)-[a-z]{1,10}", fullmatch=True).map(lambda n: {"llm:cluster": {"namespace": n}}),
        "llm:cluster.namespace",
    ),
    (st.from_regex(r"[A-Z]{1,5}=[A-Z]{1,5}", fullmatch=True).map(lambda n: {"llm:serving": {"env": {n: "1"}}}), "llm:serving.env"),
    (st.integers(max_value=-1).map(lambda n: {"llm:nodes": n}), "llm:nodes"),
    (st.text(min_size=1).filter(lambda s: s not in ("clusterip", "gateway")).map(lambda s: {"llm:routing": s}), "llm:routing"),
    (
        st.text(min_size=1).filter(lambda s: s not in CAPACITY_MODES).map(lambda s: {"llm:capacity": {"mode": s}}),
        "llm:capacity.mode",
    ),
    (st.integers(1, 2303).map(lambda n: {"llm:serving": {"maxModelLen": n}}), "llm:serving.maxModelLen"),
    (st.integers(1, 64).filter(lambda n: n != 8).map(lambda n: {"llm:serving": {"dataParallelSize": n}}), "llm:serving.dataParallelSize"),
    (st.sampled_from(["us-central1-b", "asia-east1-a", "europe-west1-b"]).map(lambda z: {"llm:zone": z}), "llm:zone"),
    (
        st.from_regex(r"[a-z][a-zA-Z]{2,12}", fullmatch=True)
        .filter(lambda k: k not in known_keys()[()] and k not in ("hfToken", "apiKey"))
        .map(_unknown_key),
        "llm:",
    ),
    (st.from_regex(r"[a-z]{3,8}/[a-z]{3,8}(:latest)?", fullmatch=True).map(lambda i: {"llm:serving": {"image": i}}), "llm:serving.image"),
]


@given(st.sampled_from(range(len(INVALID))).flatmap(lambda i: st.tuples(st.just(INVALID[i][1]), INVALID[i][0])))
def test_every_invalid_config_fails_naming_its_key_and_registers_nothing(case: tuple[str, dict[str, Any]]) -> None:
    key, mutation = case
    config = {"llm:project": "example-project", **mutation}
    record = Render(stack="dev")
    try:
        render_stack("dev", config=config, record=record)
    except StackConfigError as error:
        message = str(error)
    else:
        raise AssertionError(f"{mutation} was accepted")
    named = key if key != "llm:" else f"llm:{next(iter(mutation)).split(':', 1)[1]}: unknown key"
    assert named in message, message
    allowed = "use one of|is not|must|unknown key|is below|is out of range|should be|replaces|is set by the program|is a namespace|is more"
    assert re.search(allowed, message), message
    assert record.resources == []
