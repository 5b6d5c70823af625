"""A release's facts as read from its file, which release an image runs, and the custom histogram buckets flag.

The file of a made-up release (written here, in a folder of its own) gives every field a value the test knows;
the vendored releases are checked where the program relies on them (a deprecated flag is not acted on).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from facts import vllm
from facts.vllm import custom_buckets, facts, supported_releases, tagged_release

RELEASE = """\
commit: 0123abc
serveFlags: [--port, --seed, --old-flag]
deprecatedServeFlags:
  --old-flag: has no effect
kvCacheDtypes: [auto, fp8]
attentionBackends: [FLASHINFER, TRITON_ATTN]
mambaCacheModes: [align, none]
metrics:
  - vllm:num_requests_waiting gauge
  - vllm:prompt_tokens counter
histogramBuckets:
  vllm:time_to_first_token_seconds: [0.5, 40, 2.5]
benchServeFlags: [--backend, --seed]
benchServeChoices:
  --backend: [vllm, openai]
envNumbers:
  VLLM_DISABLE_COMPILE_CACHE: bool-int
"""


@pytest.fixture
def releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(vllm, "FACTS", tmp_path)
    return tmp_path


def test_supported_releases_are_those_with_a_file_ordered_by_number_not_by_text(releases: Path) -> None:
    for release in ("0.10.0", "0.9.2", "1.0.0", "0.9.10"):
        (releases / f"{release}.yaml").write_text(RELEASE)
    (releases / "notes.txt").write_text("not a release")
    assert supported_releases() == ("0.9.2", "0.9.10", "0.10.0", "1.0.0")


def test_a_releases_facts_are_read_field_by_field_from_its_file(releases: Path) -> None:
    (releases / "7.7.1.yaml").write_text(RELEASE)
    read = facts("7.7.1")
    assert (read.release, read.commit) == ("7.7.1", "0123abc")
    assert read.serve_flags == frozenset({"--port", "--seed", "--old-flag"})
    assert read.deprecated_flags == {"--old-flag": "has no effect"}
    assert (read.kv_cache_dtypes, read.attention_backends, read.mamba_cache_modes) == (
        ("auto", "fp8"),
        ("FLASHINFER", "TRITON_ATTN"),
        ("align", "none"),
    )
    assert read.metrics == {"vllm:num_requests_waiting": "gauge", "vllm:prompt_tokens": "counter"}
    assert read.histogram_buckets == {"vllm:time_to_first_token_seconds": (0.5, 40, 2.5)}
    assert read.bench_serve_flags == frozenset({"--backend", "--seed"})
    assert read.bench_serve_choices == {"--backend": ("vllm", "openai")}
    assert read.env_numbers == {"VLLM_DISABLE_COMPILE_CACHE": "bool-int"}
    # A deprecated flag is parsed but not acted on; a flag the release lacks is neither.
    assert read.takes("--port") and not read.takes("--old-flag") and not read.takes("--missing")
    # The largest finite bucket, wherever the list puts it.
    assert read.largest_bucket("vllm:time_to_first_token_seconds") == 40


def test_a_release_without_facts_is_refused_naming_those_with_facts(releases: Path) -> None:
    (releases / "7.7.2.yaml").write_text(RELEASE)
    with pytest.raises(KeyError, match=r"no facts of vLLM 7\.7\.3; supported: 7\.7\.2"):
        facts("7.7.3")


def test_the_vendored_releases_and_what_they_act_on() -> None:
    assert {"0.18.1", "0.33.0"} <= set(supported_releases())
    assert facts("0.18.1").takes("--mamba-cache-mode")
    # 0.33.0 deprecates it: "It has no effect" (its file's deprecatedServeFlags).
    assert not facts("0.33.0").takes("--mamba-cache-mode")


@pytest.mark.parametrize(
    ("image", "release"),
    [
        ("vllm/vllm-openai:v0.33.0", "0.33.0"),
        ("vllm/vllm-openai:0.26.0", "0.26.0"),
        ("vllm/vllm-openai:v0.33.0-cu130", "0.33.0"),
        ("vllm/vllm-openai:v0.18.1_cpu", None),
        ("registry.example:5000/vllm:v0.18.1@sha256:" + "a" * 64, "0.18.1"),
        ("vllm/vllm-openai:latest", None),
        ("vllm/vllm-openai:v0.33", None),
        ("vllm/vllm-openai:nightly-0.33.0", None),
        ("vllm/vllm-openai@sha256:" + "a" * 64, None),
        ("vllm/vllm-openai", None),
        ("not an image", None),
    ],
)
def test_an_images_tag_names_its_release(image: str, release: str | None) -> None:
    assert tagged_release(image) == release


def test_custom_buckets_are_read_from_their_flag_alone() -> None:
    assert custom_buckets(()) == {}
    assert custom_buckets(("--seed=7", "--custom-histogram-buckets-x=1")) == {}
    args = ("--seed=7", '--custom-histogram-buckets={"time_to_first_token": [1, 2.5, 100]}')
    assert custom_buckets(args) == {"time_to_first_token": [1.0, 2.5, 100.0]}
    # The value is all after the first '=', whatever it holds.
    assert custom_buckets(('--custom-histogram-buckets={"a=b": [3]}',)) == {"a=b": [3.0]}


@pytest.mark.parametrize(
    "value",
    ["[1, 2]", '{"time_to_first_token": []}', '{"time_to_first_token": 5}', '{"time_to_first_token": [true]}', '{"a": ["1"]}'],
)
def test_custom_buckets_that_are_not_lists_of_numbers_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match=r"^not a JSON object of bucket lists$"):
        custom_buckets((f"--custom-histogram-buckets={value}",))


def test_custom_buckets_that_are_not_json_are_refused() -> None:
    with pytest.raises(ValueError):
        custom_buckets(("--custom-histogram-buckets={",))
