"""The stack knows which vLLM release its image runs and holds flags, choices and metrics to that release."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
from pydantic import ValidationError

from components.benchmark import client_command
from components.replicas import engine_args
from facts.vllm import DEFAULT_RELEASE, QUERIED_METRICS, facts, supported_releases, tagged_release
from plan.stack import engine_profile, plan_stack
from render.engine import PROJECT_ROOT
from render.promql import PromQLError, check_monitoring, stack_queries
from stacks.problems import StackConfigError
from stacks.settings import StackSettings
from tests.conftest import render_with

LATEST = "0.33.0"
# The newest release whose wheel runs on torch 2.11: the one the preflight ran on a lent H100.
PREFLIGHT_RAN = "0.26.0"
LATEST_IMAGE = f"vllm/vllm-openai:v{LATEST}"
DIGEST = "sha256:" + "0123456789abcdef" * 4


def refused(**changes: Any) -> str:
    with pytest.raises(StackConfigError) as error:
        render_with("dev", **changes)
    return str(error.value)


def settings(**changes: Any) -> StackSettings:
    return StackSettings.model_validate({"project": "example-project", **changes})


def test_the_supported_releases_are_the_measured_default_the_one_the_preflight_ran_and_the_latest() -> None:
    assert supported_releases() == (DEFAULT_RELEASE, PREFLIGHT_RAN, LATEST)
    assert all(len(facts(release).commit) >= 7 for release in supported_releases())


@pytest.mark.parametrize(
    ("image", "release"),
    [
        ("vllm/vllm-openai:v0.33.0", "0.33.0"),
        (f"registry.example.com:5000/mirror/vllm-openai:v0.18.1@{DIGEST}", "0.18.1"),
        ("vllm/vllm-openai:v0.33.0-cu130", "0.33.0"),
        (f"vllm/vllm-openai@{DIGEST}", None),
        (f"vllm/vllm-openai:nightly@{DIGEST}", None),
    ],
)
def test_the_release_is_read_from_the_image_tag(image: str, release: str | None) -> None:
    assert tagged_release(image) == release


def test_render_of_the_latest_release_accepts_a_flag_new_in_it() -> None:
    render = render_with("dev", serving={"image": LATEST_IMAGE, "extraArgs": ["--max-num-queued-reqs=4096"]})
    assert (
        "--max-num-queued-reqs=4096"
        in render.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    )


def test_render_of_the_latest_release_refuses_a_flag_it_dropped() -> None:
    # --max-num-partial-prefills is a flag of vllm serve 0.18.1, gone by 0.33.0.
    assert "--max-num-partial-prefills" in facts(DEFAULT_RELEASE).serve_flags
    message = refused(serving={"image": LATEST_IMAGE, "extraArgs": ["--max-num-partial-prefills=2"]})
    assert "llm:serving.extraArgs[0]" in message and "not a flag of vllm serve 0.33.0" in message


def test_a_release_without_facts_is_refused_naming_the_supported_ones() -> None:
    message = refused(serving={"image": "vllm/vllm-openai:v0.25.0"})
    assert "llm:serving.image" in message and "0.25.0" in message and "0.18.1, 0.26.0, 0.33.0" in message


def test_an_image_pinned_by_digest_alone_takes_its_release_from_the_setting() -> None:
    message = refused(serving={"image": f"vllm/vllm-openai@{DIGEST}"})
    assert "llm:serving.vllmVersion" in message and "0.18.1, 0.26.0, 0.33.0" in message
    assert settings(serving={"image": f"vllm/vllm-openai@{DIGEST}", "vllmVersion": LATEST}).serving.release == LATEST


def test_a_version_setting_that_contradicts_the_tag_is_refused() -> None:
    message = refused(serving={"image": LATEST_IMAGE, "vllmVersion": DEFAULT_RELEASE})
    assert "llm:serving.vllmVersion" in message and "v0.33.0" in message


def test_the_latest_release_refuses_the_mamba_cache_mode_it_dropped() -> None:
    assert "all" in facts(DEFAULT_RELEASE).mamba_cache_modes
    message = refused(serving={"image": LATEST_IMAGE, "mambaCacheMode": "all"})
    assert "llm:serving.mambaCacheMode" in message and "'all'" in message and "0.33.0" in message


def test_the_latest_release_gets_no_mamba_cache_mode_flag_it_ignores() -> None:
    # 0.33.0 parses --mamba-cache-mode but ignores it: mamba caching follows prefix caching.
    assert "--mamba-cache-mode" in facts(LATEST).deprecated_flags
    old = engine_args(engine_profile(settings().serving, 256), "m", "m")
    new = engine_args(engine_profile(settings(serving={"image": LATEST_IMAGE}).serving, 256), "m", "m")
    assert "--mamba-cache-mode=align" in old and not any(arg.startswith("--mamba-cache-mode") for arg in new)


@pytest.mark.parametrize("release", [DEFAULT_RELEASE, LATEST])
def test_every_flag_of_the_engine_and_the_benchmark_is_one_its_release_acts_on(release: str) -> None:
    stack = settings(
        serving={"image": f"vllm/vllm-openai:v{release}"}, benchmark={"enabled": True, "image": f"vllm/vllm-openai:v{release}"}
    )
    specs = plan_stack(stack, "dev")
    engine = engine_args(specs.replicas.profile, "m", "m", specs.replicas.drain)[3:]
    release_facts = facts(stack.serving.release)
    assert all(release_facts.takes("-O" if arg.startswith("-O") else arg.split("=", 1)[0]) for arg in engine)
    assert specs.benchmark is not None
    bench = [arg.split("=", 1) for arg in client_command(specs.benchmark, 0, "http://x")[3:]]
    assert all(flag[0] in release_facts.bench_serve_flags for flag in bench)
    assert all(value in release_facts.bench_serve_choices.get(name, (value,)) for name, value in (f for f in bench if len(f) == 2))


def test_a_benchmark_image_without_facts_is_refused() -> None:
    message = refused(benchmark={"enabled": True, "image": "vllm/vllm-openai:v0.20.0"})
    assert "llm:benchmark.image" in message and "0.18.1, 0.26.0, 0.33.0" in message


def test_queries_are_held_to_the_metrics_of_the_stack_release() -> None:
    # vllm:prompt_tokens_recomputed is exported by 0.18.1 and gone by 0.33.0.
    assert "vllm:prompt_tokens_recomputed" in facts(DEFAULT_RELEASE).metrics
    assert "vllm:prompt_tokens_recomputed" not in facts(LATEST).metrics
    for release, fails in ((DEFAULT_RELEASE, False), (LATEST, True)):
        render = render_with("dev", serving={"image": f"vllm/vllm-openai:v{release}"})
        policy = next(r for r in render.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if r.name == "queue-depth")
        policy.inputs["conditions"][0]["conditionPrometheusQueryLanguage"]["query"] = (
            "sum(rate(vllm:prompt_tokens_recomputed_total[5m])) > 1"
        )
        if fails:
            with pytest.raises(PromQLError, match="alert queue-depth: vllm:prompt_tokens_recomputed_total"):
                check_monitoring(render)
        else:
            assert check_monitoring(render)


def test_a_ttft_objective_above_the_largest_bucket_is_refused() -> None:
    largest = facts(DEFAULT_RELEASE).largest_bucket("vllm:time_to_first_token_seconds")
    message = refused(observability={"ttftP99Seconds": 5000})
    assert "llm:observability.ttftP99Seconds" in message and "5000" in message and f"{largest:g}" in message
    assert "seconds" in message
    # histogram_quantile never returns more than the largest finite bucket: "> largest" never holds either.
    with pytest.raises(ValidationError, match="not below the largest bucket"):
        settings(observability={"ttftP99Seconds": largest})
    below = max(b for b in facts(DEFAULT_RELEASE).histogram_buckets["vllm:time_to_first_token_seconds"] if b < largest)
    assert settings(observability={"ttftP99Seconds": below}).observability.ttft_p99_seconds == below


@pytest.mark.parametrize("release", [DEFAULT_RELEASE, LATEST])
def test_a_mamba_cache_mode_needs_prefix_caching_and_chunked_prefill(release: str) -> None:
    image = f"vllm/vllm-openai:v{release}"
    no_prefix = refused(serving={"image": image, "enablePrefixCaching": False})
    assert "llm:serving.mambaCacheMode" in no_prefix and "'align'" in no_prefix and "enablePrefixCaching" in no_prefix
    no_chunks = refused(serving={"image": image, "enableChunkedPrefill": False, "maxNumBatchedTokens": 8192})
    assert "llm:serving.mambaCacheMode" in no_chunks and "enableChunkedPrefill" in no_chunks
    assert settings(serving={"image": image, "enablePrefixCaching": False, "mambaCacheMode": None, "mambaBlockSize": None})


def test_custom_ttft_buckets_set_the_objective_limit() -> None:
    assert "--custom-histogram-buckets" in facts(LATEST).serve_flags
    custom = '--custom-histogram-buckets={"time_to_first_token": [0.5, 1, 2, 5, 10, 20]}'
    message = refused(serving={"image": LATEST_IMAGE, "extraArgs": [custom]})
    assert "llm:observability.ttftP99Seconds" in message and "30" in message and "20 s" in message
    wider = '--custom-histogram-buckets={"time_to_first_token": [1, 10, 100, 1000, 5000, 10000]}'
    stack = settings(serving={"image": LATEST_IMAGE, "extraArgs": [wider]}, observability={"ttftP99Seconds": 3600})
    assert stack.observability.ttft_p99_seconds == 3600
    malformed = refused(serving={"image": LATEST_IMAGE, "extraArgs": ["--custom-histogram-buckets=[1, 2]"]})
    assert "llm:serving.extraArgs[0]" in malformed and "JSON object of bucket lists" in malformed


def test_the_dashboard_alerts_and_scaler_read_metrics_the_latest_release_exports() -> None:
    render = render_with("dev", serving={"image": LATEST_IMAGE}, autoscaling={"enabled": True})
    assert render.outputs["vllmVersion"] == LATEST
    assert any(where.startswith("scaler trigger") for where, _ in stack_queries(render))
    assert check_monitoring(render) >= 20


@pytest.mark.parametrize("release", supported_releases())
def test_every_metric_the_program_queries_is_one_each_release_exports(release: str) -> None:
    assert [name for name in QUERIED_METRICS if name not in facts(release).metrics] == []


def _vllm_metric_literals(source: str) -> list[str]:
    return [
        f"{node.lineno}: {node.value}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(r"\bvllm:[a-z_]+", node.value)
    ]


def test_the_check_finds_a_metric_name_written_out() -> None:
    assert _vllm_metric_literals('QUERY = "sum(vllm:num_requests_waiting)"\nLABEL = "app.kubernetes.io/name=vllm: x"\n') == [
        "1: sum(vllm:num_requests_waiting)"
    ]


def test_metric_names_live_only_with_the_vllm_facts() -> None:
    # dev/vllm_facts.py reads them out of vLLM's source; the program names them through facts/vllm.py.
    program = [
        path
        for folder in ("components", "stacks", "plan", "policy", "render", "workloads", "ops")
        for path in (PROJECT_ROOT / folder).rglob("*.py")
    ]
    found = {str(path.relative_to(PROJECT_ROOT)): lines for path in program if (lines := _vllm_metric_literals(path.read_text()))}
    assert found == {}
