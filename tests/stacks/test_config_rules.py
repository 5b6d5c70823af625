"""Config that would only fail later is refused naming key, value and what is allowed; valid config is accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.replicas import engine_args
from facts.vllm import DEFAULT_RELEASE, facts
from plan.stack import plan_stack
from render.engine import render_stack, stack_config
from render.files import write
from render.validation import validate_render
from stacks.problems import StackConfigError
from stacks.serving import MANAGED_FLAGS
from stacks.settings import StackSettings
from tests.conftest import render_with, stack_file_config


def refused(stack: str = "dev", **changes: Any) -> str:
    with pytest.raises(StackConfigError) as error:
        render_with(stack, **changes)
    return str(error.value)


UNPROTECTED = {"deletionProtection": False}
SHARED_RESERVATION = {"mode": "reservation", "reservation": {"name": "a4", "project": "Other_Project"}}

REFUSED: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "managed flag",
        {"serving": {"extraArgs": ["--max-model-len=4096"]}},
        ["llm:serving.extraArgs[0]", "'--max-model-len=4096'", "serving.maxModelLen"],
    ),
    ("managed switch", {"serving": {"extraArgs": ["--no-enable-prefix-caching"]}}, ["serving.enablePrefixCaching"]),
    ("managed -O", {"serving": {"extraArgs": ["-O0"]}}, ["serving.optimizationLevel"]),
    ("flag with a space", {"serving": {"extraArgs": ["--max-num-seqs 512"]}}, ["--name=value"]),
    ("unknown flag", {"serving": {"extraArgs": ["--max-num-sequences=512"]}}, ["not a flag of vllm serve 0.18.1"]),
    ("env name with =", {"serving": {"env": {"A=B": "1"}}}, ["llm:serving.env.A=B", "without '='"]),
    ("plain-text token", {"serving": {"env": {"HF_TOKEN": "hf_abc"}}}, ["llm:serving.env.HF_TOKEN", "pulumi config set --secret hfToken"]),
    ("plain-text key", {"serving": {"env": {"VLLM_API_KEY": "k"}}}, ["pulumi config set --secret apiKey"]),
    (
        "attention backend",
        {"serving": {"attentionBackend": "FLASH_INFER"}},
        ["serving.attentionBackend", "'FLASH_INFER'", "FLASHINFER"],
    ),
    ("mamba cache mode", {"serving": {"mambaCacheMode": "aligned"}}, ["llm:serving.mambaCacheMode", "align"]),
    (
        "no chunked prefill",
        {"serving": {"enableChunkedPrefill": False, "maxNumBatchedTokens": 2048, "maxNumSeqs": 1024, "mambaCacheMode": None}},
        ["llm:serving.maxNumBatchedTokens", "below maxModelLen (2560)"],
    ),
    ("batch below seqs", {"serving": {"maxNumSeqs": 32768}}, ["llm:serving.maxNumBatchedTokens", "below maxNumSeqs (32768)"]),
    ("cpu beyond A4", {"serving": {"cpu": "224"}}, ["llm:serving.cpu", "'224'", "220"]),
    ("memory beyond A4", {"serving": {"memory": "4Ti"}}, ["llm:serving.memory", "3850Gi"]),
    (
        "reserved namespace",
        {"cluster": {**UNPROTECTED, "namespace": "kube-system"}},
        ["llm:cluster.namespace", "kube-system"],
    ),
    ("gke namespace", {"cluster": {**UNPROTECTED, "namespace": "gke-managed-x"}}, ["gke-*"]),
    ("proxy subnet name", {"routing": "gateway", "gateway": {"existingProxySubnet": "My_Subnet"}}, ["llm:gateway.existingProxySubnet"]),
    (
        "reservation project",
        {"capacity": SHARED_RESERVATION},
        ["reservation.project"],
    ),
    ("reservation name", {"capacity": {"mode": "reservation", "reservation": {"name": "A4 Nodes"}}}, ["reservation.name"]),
    ("empty revision", {"model": {"revision": ""}}, ["llm:model.revision", "branch, tag or commit"]),
    ("program label", {"labels": {"stack": "other"}}, ["llm:labels.stack", "replaces a label the program sets"]),
    ("bool as yes", {"allowPublicExposure": "yes"}, ["llm:allowPublicExposure", "'yes'", "true or false"]),
    ("nested bool as 1", {"cache": {"enabled": 1}}, ["llm:cache.enabled", "true or false"]),
    ("loopback range", {"network": {"podCidr": "127.0.0.0/14"}}, ["llm:network.podCidr", "GCP refuses"]),
]


@pytest.mark.parametrize(("case", "changes", "expected"), REFUSED, ids=[r[0] for r in REFUSED])
def test_config_that_would_fail_later_is_refused(case: str, changes: dict[str, Any], expected: list[str]) -> None:
    message = refused(**changes)
    for fragment in expected:
        assert fragment in message, f"{case}: {fragment!r} not in {message}"


def test_a_plain_text_credential_is_never_echoed() -> None:
    assert "hf_abc" not in refused(serving={"env": {"HF_TOKEN": "hf_abc"}})


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("extended channel", {"cluster": {"deletionProtection": False, "releaseChannel": "extended"}}),
    ("shared address space", {"network": {"podCidr": "100.64.0.0/14", "serviceCidr": "100.72.0.0/20"}}),
    ("class E", {"network": {"podCidr": "240.0.0.0/14"}}),
    ("decimal memory", {"serving": {"memory": "1900G"}}),
    ("decimal cpu", {"serving": {"cpu": "180000m"}}),
    ("a vLLM flag", {"serving": {"extraArgs": ["--enable-log-requests", "--no-enable-log-requests", "--max-logprobs=5"]}}),
    ("bools as Pulumi writes them", {"allowPublicExposure": "false", "cache": {"enabled": "true"}}),
]


@pytest.mark.parametrize(("case", "changes"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_valid_config_is_accepted(case: str, changes: dict[str, Any]) -> None:
    assert validate_render(render_with("dev", **changes))


def test_the_extended_channel_reaches_the_cluster() -> None:
    render = render_with("dev", cluster={"deletionProtection": False, "releaseChannel": "extended"})
    assert render.one("gcp:container/cluster:Cluster").inputs["releaseChannel"] == {"channel": "EXTENDED"}


def test_every_flag_the_program_sets_is_a_managed_vllm_flag() -> None:
    settings = StackSettings.model_validate({"project": "example-project"})
    spec = plan_stack(settings, "dev").replicas
    flags = {arg.split("=", 1)[0] if not arg.startswith("-O") else "-O" for arg in engine_args(spec.profile, "m", "m", spec.drain)[3:]}
    assert flags <= set(MANAGED_FLAGS)
    assert set(MANAGED_FLAGS) <= facts(DEFAULT_RELEASE).serve_flags


def test_the_vllm_facts_hold_what_the_defaults_use() -> None:
    measured = facts(DEFAULT_RELEASE)
    assert "FLASHINFER" in measured.attention_backends and measured.mamba_cache_modes == ("all", "align", "none")
    assert {"vllm:num_requests_waiting", "vllm:num_requests_running"} <= set(measured.metrics)


# --- stack files ---------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: llm\nruntime: python\n")
    return tmp_path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("config:\n  llm:nodes: 1\n  llm:nodes: 2\n", "Pulumi.s.yaml: key 'llm:nodes' appears twice (lines 2 and 3)"),
        ("config:\n  llm:cache:\n    enabled: true\n    enabled: false\n", "key 'enabled' appears twice"),
        ("config: [1, 2]\n", "Pulumi.s.yaml: config is a list, not a mapping"),
        ("- 1\n", "Pulumi.s.yaml: is a list, not a mapping"),
        ("config:\n  a: [\n", "Pulumi.s.yaml: is not valid YAML"),
    ],
    ids=["duplicate key", "duplicate nested key", "config not a mapping", "not a mapping", "not YAML"],
)
def test_a_stack_file_the_cli_would_refuse_fails_naming_the_file(project: Path, text: str, expected: str) -> None:
    (project / "Pulumi.s.yaml").write_text(text)
    with pytest.raises(StackConfigError, match="stack configuration has 1 problem") as error:
        stack_config("s", project)
    assert expected in str(error.value)


# --- secrets -------------------------------------------------------------------------------------

TOKEN = "hf_offlineRenderTokenValue0123456789"
KEY = "sk-offline-render-api-key-0123456789"


def test_a_stack_with_both_secrets_renders_validates_and_shows_only_placeholders(tmp_path: Path) -> None:
    render = render_stack("dev", secrets={"hfToken": TOKEN, "apiKey": KEY})
    assert validate_render(render)
    write(render, tmp_path)
    text = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert TOKEN not in text and KEY not in text
    secret = (tmp_path / "kubernetes" / "llm-serving.secret.hf-token.yaml").read_text()
    assert "value: '[secret]'" in secret


def test_secure_values_in_the_stack_file_render_as_secrets() -> None:
    config = {**stack_file_config("dev"), "llm:hfToken": {"secure": "v1:abc"}, "llm:apiKey": {"secure": "v1:def"}}
    render = render_stack("dev", config=config)
    assert validate_render(render)
    assert len(render.by_type("kubernetes:core/v1:Secret")) == 2


def test_a_secret_elsewhere_than_the_credential_keys_is_refused_rather_than_rendered_in_plain_text() -> None:
    config = {**stack_file_config("dev"), "llm:serving": {"secure": "v1:abc"}}
    with pytest.raises(StackConfigError, match="llm:serving: is set as a secret, but only hfToken and apiKey"):
        render_stack("dev", config=config)
