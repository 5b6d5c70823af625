"""Each adaptation on hand-made command lines: what changes, to what, and the reason given for it.

Expected values come from docs/preflight.md ("What it adapts, and why") and from vLLM's own rules: the
engines of one node are ``--data-parallel-size`` (``-dp``), each of ``--tensor-parallel-size`` (``-tp``)
times ``--pipeline-parallel-size`` (``-pp``) GPUs; argparse takes ``--flag value`` and ``--flag=value``
alike; vLLM 0.26.0 defaults to FlashInfer's CuTe-DSL Gated DeltaNet prefill on sm_90, and on sm_10x with
128-wide keys and a CUDA 13 runtime.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from preflight.adapt import (
    Adaptation,
    EngineRun,
    Machine,
    ModelShape,
    ShapeError,
    adapt,
    container_command,
    flashinfer_gdn_prefill,
    parallel_shape,
    without_flags,
)
from preflight.rendered import EngineSpec

H100 = Machine(gpus=1, capability=(9, 0), cuda_runtime_major=13, modules=frozenset())
B200 = Machine(gpus=8, capability=(10, 0), cuda_runtime_major=13, modules=frozenset())
QWEN35 = ModelShape(linear_attention=True, linear_key_head_dim=128)
DENSE = ModelShape(linear_attention=False, linear_key_head_dim=None)

ENGINE = EngineSpec(
    deployment="vllm",
    container="vllm",
    image="vllm/vllm-openai:v0.26.0",
    launcher=("vllm", "serve"),
    model_path="/models/m",
    flags=("--host=0.0.0.0", "--port=8000", "--data-parallel-size=8", "--max-model-len=4096"),
    env={"VLLM_CACHE_ROOT": "/compile-cache", "HF_HUB_OFFLINE": "1"},
    env_from_refs=(),
    port=8000,
    mounts=(),
    gpus=8,
    grace_seconds=30,
    prestop_sleep_seconds=5.0,
)


def adapted(
    flags: tuple[str, ...] | None = None,
    machine: Machine = H100,
    *,
    model: ModelShape = DENSE,
    port: int = 8000,
    takes_gdn_flag: bool = True,
    volumes: dict[str, str] | None = None,
    isolated: dict[str, str] | None = None,
    full_size: bool = False,
    **engine: object,
) -> EngineRun:
    if flags is not None:
        # A node that holds the shape the flags ask for (the node's own check has its tests below).
        engine = {"flags": flags, "gpus": parallel_shape(flags).gpus, **engine}
    spec = replace(ENGINE, **engine)  # type: ignore[arg-type]
    return adapt(
        spec,
        machine,
        model_dir="/local/model",
        volumes=volumes or {},
        port=port,
        takes_gdn_flag=takes_gdn_flag,
        model=model,
        isolated=isolated,
        full_size=full_size,
    )


def change(run: EngineRun, what: str) -> Adaptation:
    [found] = [a for a in run.adaptations if a.what == what]
    return found


def test_the_engines_that_do_not_fit_are_cut_to_those_that_do_and_the_reason_counts_both() -> None:
    run = adapted(machine=replace(H100, gpus=2))
    assert run.flags == ("--host=0.0.0.0", "--port=8000", "--data-parallel-size=2", "--max-model-len=4096")
    dp = change(run, "--data-parallel-size")
    assert (dp.rendered, dp.run) == ("8", "2")
    assert "runs 8 engines of 1 GPU(s) on a node of 8 GPUs" in dp.reason
    assert "this machine has 2 GPU(s), so 2 engine(s) fit" in dp.reason


def test_a_node_of_unknown_size_is_said_so() -> None:
    assert "on a node of ? GPUs" in change(adapted(gpus=0), "--data-parallel-size").reason


def test_engines_that_fit_are_left_alone() -> None:
    run = adapted(machine=replace(H100, gpus=8))
    assert run.flags == ENGINE.flags
    assert [a.what for a in run.adaptations] == ["model"]


@pytest.mark.parametrize(
    ("parallel", "gpus", "engines", "each"),
    [
        (("-tp", "2"), 4, "2", 2),
        (("--tensor-parallel-size", "2"), 5, "2", 2),
        (("-pp=2",), 4, "2", 2),
        (("--pipeline-parallel-size=2", "--tensor-parallel-size=2"), 4, "1", 4),
        (("-tp=4",), 4, "1", 4),
    ],
)
def test_one_engine_takes_tensor_times_pipeline_gpus(parallel: tuple[str, ...], gpus: int, engines: str, each: int) -> None:
    run = adapted((*ENGINE.flags, *parallel), replace(H100, gpus=gpus))
    assert run.flag("--data-parallel-size") == engines
    assert f"runs 8 engines of {each} GPU(s)" in change(run, "--data-parallel-size").reason


def test_a_machine_short_of_one_engine_is_refused_naming_both_counts_and_the_setting() -> None:
    with pytest.raises(ShapeError) as raised:
        adapted(("--data-parallel-size=2", "-tp=2", "-pp=2"), replace(H100, gpus=2))
    assert "tensor parallel 2 x pipeline parallel 2 (llm:serving.tensorParallelSize): 4 GPUs; this machine has 2 GPUs" in str(raised.value)
    with pytest.raises(ShapeError, match=r"this machine has 1 GPU: run the preflight on a machine with at least 2$"):
        adapted(("--data-parallel-size=4", "-tp=2"), H100)


@pytest.mark.parametrize(
    ("flags", "gpus", "text"),
    [
        (("--data-parallel-size=8", "--tensor-parallel-size=8"), 8, "data parallel 8 x tensor parallel 8 = 64 GPUs, on a node of 8"),
        (("--data-parallel-size=2", "-tp", "2"), 8, "data parallel 2 x tensor parallel 2 = 4 GPUs, on a node of 8"),
        (("-dp=2", "-tp=2", "-pp=4"), 8, "data parallel 2 x tensor parallel 2 x pipeline parallel 4 = 16 GPUs"),
    ],
)
def test_a_shape_that_is_not_its_nodes_gpus_fails_before_the_machine_is_looked_at(flags: tuple[str, ...], gpus: int, text: str) -> None:
    with pytest.raises(ShapeError, match=r"llm:serving\.dataParallelSize x llm:serving\.tensorParallelSize to 8") as raised:
        adapted(flags, replace(H100, gpus=64), gpus=gpus)
    assert text in str(raised.value)


def test_expert_parallelism_is_kept_as_rendered() -> None:
    run = adapted(("--data-parallel-size=1", "--tensor-parallel-size=8", "--enable-expert-parallel"), replace(H100, gpus=8))
    assert run.flags == ("--data-parallel-size=1", "--tensor-parallel-size=8", "--enable-expert-parallel")


def test_the_short_data_parallel_form_is_read_and_replaced_by_the_long_one_in_place() -> None:
    run = adapted(("--host=0.0.0.0", "-dp", "4", "--max-model-len=4096"))
    assert run.flags == ("--host=0.0.0.0", "--data-parallel-size=1", "--max-model-len=4096")
    assert change(run, "--data-parallel-size").rendered == "4"


def test_every_form_of_the_flag_goes_and_one_stands_where_the_first_stood() -> None:
    run = adapted(("-dp=2", "--host=0.0.0.0", "--data-parallel-size", "4", "--max-model-len=4096"))
    assert run.flags == ("--data-parallel-size=1", "--host=0.0.0.0", "--max-model-len=4096")


def test_a_flag_without_a_value_does_not_take_the_next_flag_with_it() -> None:
    run = adapted(("--data-parallel-size=4", "--port", "--enforce-eager"), port=9000)
    assert run.flags == ("--data-parallel-size=1", "--port=9000", "--enforce-eager")


def test_a_flag_given_with_its_value_keeps_the_word_after_it() -> None:
    assert adapted(("--data-parallel-size=4", "word"), port=9000).flags == ("--data-parallel-size=1", "word", "--port=9000")


def test_a_spaced_flag_without_a_value_at_the_end_is_replaced() -> None:
    assert adapted(("--host=h", "--port"), port=9000).flags == ("--host=h", "--port=9000")


def test_an_empty_data_parallel_value_counts_as_one_engine() -> None:
    run = adapted(("--data-parallel-size=", "--host=0.0.0.0"))
    assert run.flags == ("--data-parallel-size=", "--host=0.0.0.0")


def test_the_model_is_always_the_miniature_and_said_so() -> None:
    run = adapted(machine=replace(H100, gpus=8))
    assert run.model == "/local/model"
    model = change(run, "model")
    assert (model.rendered, model.run) == ("/models/m", "/local/model")
    assert "miniature" in model.reason and "no weights are downloaded" in model.reason


def test_another_port_replaces_the_rendered_one_or_is_added() -> None:
    run = adapted(port=8123)
    assert run.port == 8123
    assert run.flags == ("--host=0.0.0.0", "--port=8123", "--data-parallel-size=1", "--max-model-len=4096")
    port = change(run, "--port")
    assert (port.rendered, port.run) == ("8000", "8123")
    assert "when 8000 is taken here" in port.reason
    assert adapted(("--host=0.0.0.0",), port=8123).flags == ("--host=0.0.0.0", "--port=8123")


def test_the_rendered_port_is_kept_with_no_change_listed() -> None:
    run = adapted(machine=replace(H100, gpus=8))
    assert run.port == 8000 and "--port" not in [a.what for a in run.adaptations]


@pytest.mark.parametrize(
    ("machine", "model", "flashinfer"),
    [
        (H100, QWEN35, True),
        (H100, replace(QWEN35, linear_key_head_dim=64), True),
        (H100, DENSE, False),
        (replace(H100, capability=None), QWEN35, False),
        (replace(H100, capability=(9, 1)), QWEN35, False),
        (replace(H100, capability=(8, 9)), QWEN35, False),
        (B200, QWEN35, True),
        (replace(B200, capability=(10, 3)), QWEN35, True),
        (replace(B200, cuda_runtime_major=14), QWEN35, True),
        (replace(B200, cuda_runtime_major=12), QWEN35, False),
        (replace(B200, cuda_runtime_major=None), QWEN35, False),
        (B200, replace(QWEN35, linear_key_head_dim=64), False),
        (replace(B200, capability=(12, 0)), QWEN35, False),
        (replace(B200, capability=(11, 0)), QWEN35, False),
        (B200, DENSE, False),
    ],
    ids=[
        "sm90",
        "sm90-any-head",
        "sm90-no-deltanet",
        "no-gpu-read",
        "sm91",
        "sm89",
        "sm100-cuda13",
        "sm103",
        "sm100-cuda14",
        "sm100-cuda12",
        "sm100-cuda-unknown",
        "sm100-head-64",
        "sm120",
        "sm110",
        "sm100-no-deltanet",
    ],
)
def test_where_vllm_picks_flashinfers_deltanet_prefill(machine: Machine, model: ModelShape, flashinfer: bool) -> None:
    assert flashinfer_gdn_prefill(machine, model) is flashinfer


def test_the_triton_prefill_is_added_last_with_the_architecture_and_package_in_its_reason() -> None:
    run = adapted(model=QWEN35, machine=replace(H100, gpus=8))
    assert run.flags == (*ENGINE.flags, "--gdn-prefill-backend=triton")
    gdn = change(run, "--gdn-prefill-backend")
    assert (gdn.rendered, gdn.run) == (None, "triton")
    assert gdn.reason.startswith("on sm_90 vLLM's default Gated DeltaNet prefill is FlashInfer's CuTe-DSL kernel")
    assert "nvidia-cutlass-dsl (module `cutlass`)" in gdn.reason
    assert "The stack's image must contain that package" in gdn.reason
    assert "sm_100" in change(adapted(model=QWEN35, machine=B200), "--gdn-prefill-backend").reason


def test_a_prefill_backend_given_spaced_is_kept() -> None:
    flags = (*ENGINE.flags, "--gdn-prefill-backend", "flashinfer")
    assert adapted(flags, replace(H100, gpus=8), model=QWEN35).flags == flags


def test_a_variable_under_a_mount_points_at_its_local_folder_the_deepest_mount_winning() -> None:
    volumes = {"/data": "/local/data", "/data/cache": "/local/cache", "/compile-cache": "/local/compile"}
    env = {"A": "/data/cache/x/y", "B": "/data/other", "C": "/data", "D": "/data-old/z", "E": "/compile-cache/", "F": "plain"}
    run = adapted(machine=replace(H100, gpus=8), volumes=volumes, env=env)
    assert run.env == {
        "A": "/local/cache/x/y",
        "B": "/local/data/other",
        "C": "/local/data",
        "D": "/data-old/z",
        "E": "/local/compile",
        "F": "plain",
    }
    a = change(run, "env A")
    assert (a.rendered, a.run) == ("/data/cache/x/y", "/local/cache/x/y")
    assert a.reason == "the pod mounts a volume at /data/cache; a local folder stands in for it"
    assert [x.what for x in run.adaptations] == ["model", "env A", "env B", "env C", "env E"]


def test_a_mount_written_with_a_trailing_slash_holds_what_is_under_it() -> None:
    run = adapted(machine=replace(H100, gpus=8), volumes={"/data/": "/local/data"}, env={"A": "/data/x"})
    assert run.env == {"A": "/local/data/x"}


def test_variables_from_secrets_are_listed_and_left_unset() -> None:
    run = adapted(machine=replace(H100, gpus=8), env_from_refs=("HF_TOKEN",))
    token = change(run, "env HF_TOKEN")
    assert (token.rendered, token.run) == ("(from a secret or field)", None)
    assert token.reason == "its value is not in the render; left unset"
    assert "HF_TOKEN" not in run.env


def test_each_start_gets_its_own_home_and_temporary_folder() -> None:
    run = adapted(machine=replace(H100, gpus=8), isolated={"HOME": "/w/home", "TMPDIR": "/w/tmp"})
    assert run.env["HOME"] == "/w/home" and run.env["TMPDIR"] == "/w/tmp"
    home = change(run, "env HOME")
    assert (home.rendered, home.run) == (None, "/w/home")
    assert "its own folder" in home.reason and "measured" in home.reason
    assert adapted(machine=replace(H100, gpus=8), isolated=None).env == ENGINE.env


def test_an_adaptation_reads_as_a_dict_of_its_four_fields() -> None:
    assert Adaptation("w", "r", None, "why").as_dict() == {"what": "w", "rendered": "r", "run": None, "reason": "why"}


@pytest.mark.parametrize(
    ("flags", "left"),
    [
        (("--a=1", "--speculative-config", "{}", "--b"), ("--a=1", "--b")),
        (("--speculative-config={}", "--b"), ("--b",)),
        (("--a", "--speculative-config"), ("--a",)),
        (("--speculative-config", "--b", "x"), ("--b", "x")),
        (("--speculative-config={}", "x"), ("x",)),
        (("--a", "--speculative-config", "{}"), ("--a",)),
        (('--speculative-config={"model": "a=b"}', "--b"), ("--b",)),
    ],
)
def test_a_variant_drops_the_flag_in_every_form_and_only_its_own_value(flags: tuple[str, ...], left: tuple[str, ...]) -> None:
    assert without_flags(flags, ("--speculative-config",)) == left


def test_the_container_publishes_the_run_port_and_passes_only_what_is_given() -> None:
    spec = replace(ENGINE, shm_bytes=None, env={"Z": "1", "A": "2"})
    run = adapted(machine=replace(H100, gpus=8), port=9001)
    words = container_command("docker", spec, run, name="n", model_dir="/local/model", volumes={"/z": "/local/z", "/a": "/local/a"})
    assert words[7:9] == ["-p", "9001:9001"]
    assert not any(w.startswith("--shm-size") for w in words)
    assert "/root" not in " ".join(words)
    volumes = [words[i + 1] for i, w in enumerate(words) if w == "-v"]
    assert volumes == ["/local/model:/models/m:ro", "/local/a:/a", "/local/z:/z"]
    assert [words[i + 1] for i, w in enumerate(words) if w == "-e"] == ["A=2", "Z=1"]


def test_the_home_folder_is_mounted_at_roots_home() -> None:
    run = adapted(machine=replace(H100, gpus=8))
    words = container_command("podman", ENGINE, run, name="n", model_dir="/local/model", volumes={}, home="/local/home")
    assert words[words.index("/local/home:/root") - 1] == "-v"


def test_full_size_runs_the_real_config_with_dummy_weights_and_says_why() -> None:
    run = adapted(machine=replace(H100, gpus=8), full_size=True)
    assert run.flags == (*ENGINE.flags, "--load-format=dummy")
    model, load = change(run, "model"), change(run, "--load-format")
    assert "real size and quantization" in model.reason and "miniature" not in model.reason
    assert (load.rendered, load.run) == (None, "dummy") and "random weights" in load.reason


def test_full_size_replaces_a_rendered_load_format_in_place() -> None:
    flags = ("--data-parallel-size=1", "--load-format", "runai_streamer", "--max-model-len=4096")
    run = adapted(flags, full_size=True)
    assert run.flags == ("--data-parallel-size=1", "--load-format=dummy", "--max-model-len=4096")
    assert change(run, "--load-format").rendered == "runai_streamer"
    assert "--load-format" not in [a.what for a in adapted(flags).adaptations]
