"""The extractor reads both source layouts vLLM has used, and the vendored facts say where they came from."""

from __future__ import annotations

import re
from pathlib import Path
from textwrap import dedent

import pytest

from dev.vllm_facts import facts
from facts.data_files import read_yaml
from facts.vllm import FACTS, supported_releases

# A release's source, cut down to the shapes the extractor reads; the 0.33.0 layout.
SOURCE = {
    "_version.py": """
        __version__ = version = '9.9.9'
        __commit_id__ = commit_id = 'gabc1234'
    """,
    "engine/arg_utils.py": """
        _MAMBA_CACHE_MODE_DEPRECATION_MESSAGE = ("--mamba-cache-mode is deprecated. " "It has no effect.")
        def get_kwargs(cls):
            if type_hints == {bool, str, type(None)}:
                pass
        class EngineArgs:
            enable_prefix_caching: bool | None = None
            reasoning: bool | str | None = None
            max_model_len: int = 0
            @staticmethod
            def add_cli_args(group):
                group.add_argument("--enable-prefix-caching")
                group.add_argument("--reasoning")
                group.add_argument("--max-model-len", "-mml")
                group.add_argument("--mamba-cache-mode", **{"help": _MAMBA_CACHE_MODE_DEPRECATION_MESSAGE})
    """,
    "entrypoints/common/cli_args.py": """
        class FrontendArgs:
            port: int = 8000
            enable_log_outputs: bool = False
    """,
    "entrypoints/cli/serve.py": """
        def make(parser):
            parser.add_argument("--headless", action="store_true")
    """,
    "v1/attention/backends/registry.py": """
        class AttentionBackendEnum(Enum):
            FLASHINFER = "x"
            TRITON_ATTN = "y"
    """,
    "config/cache.py": """
        CacheDType = Literal["auto", "fp8_e4m3"]
        MambaCacheMode = Literal["align", "none"]
    """,
    "v1/metrics/buckets.py": """
        TIME_TO_FIRST_TOKEN_BUCKETS: tuple[float, ...] = (0.5, 2560.0)
        _STATIC_FAMILY_DEFAULTS: dict[str, tuple[float, ...]] = {"time_to_first_token": TIME_TO_FIRST_TOKEN_BUCKETS}
    """,
    "v1/metrics/loggers.py": """
        def setup(self):
            ttft = histogram_buckets("time_to_first_token", overrides=custom)
            self._histogram_cls(name="vllm:time_to_first_token_seconds", buckets=ttft)
            self._histogram_cls(name="vllm:request_prompt_tokens", buckets=build_1_2_5_buckets(max_model_len))
            self._gauge_cls(name="vllm:num_requests_waiting")
    """,
    "v1/spec_decode/metrics.py": """
        def setup(self):
            counter_specs = [("vllm:spec_decode_num_drafts", "Drafts."), ("vllm:spec_decode_num_draft_tokens", "Tokens.")]
            counters = [self._counter_cls(name=name, documentation=doc) for name, doc in counter_specs]
    """,
    "benchmarks/serve.py": """
        def add_cli_args(parser):
            parser.add_argument("--backend", choices=list(ASYNC_REQUEST_FUNCS.keys()))
            parser.add_argument("--max-concurrency")
    """,
    "benchmarks/datasets/datasets.py": """
        def add_dataset_parser(parser):
            parser.add_argument("--dataset-name", choices=["random", "sharegpt"])
    """,
    "benchmarks/lib/endpoint_request_func.py": """
        ASYNC_REQUEST_FUNCS: dict[str, RequestFunc] = {"vllm": a, "openai": a}
    """,
    "envs.py": """
        def maybe_convert_int(value):
            return None if value is None else int(value)
        def disable_compile_cache():
            return bool(int(os.getenv("VLLM_DISABLE_COMPILE_CACHE", "0")))
        environment_variables: dict[str, Callable[[], Any]] = {
            "VLLM_CACHE_ROOT": lambda: os.path.expanduser(os.getenv("VLLM_CACHE_ROOT", "~")),
            "VLLM_DISABLE_COMPILE_CACHE": disable_compile_cache,
            "VLLM_FLASH_ATTN_VERSION": lambda: maybe_convert_int(os.environ.get("VLLM_FLASH_ATTN_VERSION", None)),
            "VLLM_LOG_STATS_INTERVAL": lambda: float(os.getenv("VLLM_LOG_STATS_INTERVAL", "10.")),
            "VLLM_USE_MODELSCOPE": lambda: os.environ.get("VLLM_USE_MODELSCOPE", "False").lower() == "true",
            "VLLM_ATTENTION_BACKEND": env_with_choices("VLLM_ATTENTION_BACKEND", None, ["FLASHINFER"]),
        }
    """,
}


def test_the_extractor_reads_flags_choices_metrics_and_buckets(tmp_path: Path) -> None:
    for path, text in SOURCE.items():
        (tmp_path / "vllm" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "vllm" / path).write_text(dedent(text))
    found = facts(tmp_path, "https://example.invalid/vllm-9.9.9.tar.gz", "0" * 64)
    assert (found["version"], found["tag"], found["commit"]) == ("9.9.9", "v9.9.9", "abc1234")
    flags = set(found["serveFlags"])
    # A bool field is negatable; a bool | str | None field is optional-valued where get_kwargs says so.
    assert {"--enable-prefix-caching", "--no-enable-prefix-caching", "--port", "--enable-log-outputs", "--headless", "-mml", "-O"} <= flags
    assert "--no-reasoning" not in flags and "--no-max-model-len" not in flags
    assert found["deprecatedServeFlags"] == {"--mamba-cache-mode": "--mamba-cache-mode is deprecated. It has no effect."}
    assert found["attentionBackends"] == ["FLASHINFER", "TRITON_ATTN"] and found["mambaCacheModes"] == ["align", "none"]
    assert found["kvCacheDtypes"] == ["auto", "fp8_e4m3"]
    assert "vllm:spec_decode_num_draft_tokens counter" in found["metrics"] and "vllm:num_requests_waiting gauge" in found["metrics"]
    # Buckets computed from max_model_len have no fixed value.
    assert found["histogramBuckets"] == {"vllm:time_to_first_token_seconds": [0.5, 2560.0]}
    assert found["benchServeFlags"] == ["--backend", "--dataset-name", "--max-concurrency"]
    assert found["benchServeChoices"] == {"--backend": ["vllm", "openai"], "--dataset-name": ["random", "sharegpt"]}
    # Text, a choice or a comparison is not a number; bool(int(...)) through a named getter is.
    assert found["envNumbers"] == {
        "VLLM_DISABLE_COMPILE_CACHE": "bool-int",
        "VLLM_FLASH_ATTN_VERSION": "int",
        "VLLM_LOG_STATS_INTERVAL": "float",
    }


@pytest.mark.parametrize("release", supported_releases())
def test_vendored_facts_name_their_release_tag_commit_and_source(release: str) -> None:
    data = read_yaml(FACTS / f"{release}.yaml")
    assert data["version"] == release and data["tag"] == f"v{release}"
    assert re.fullmatch(r"[0-9a-f]{7,40}", data["commit"])
    assert data["source"].startswith("https://files.pythonhosted.org/") and data["source"].endswith(f"/vllm-{release}.tar.gz")
    assert re.fullmatch(r"[0-9a-f]{64}", data["sha256"])
