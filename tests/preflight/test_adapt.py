"""Only what the machine forces is changed, each change with its reason; a stack that cannot run here is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from preflight.adapt import (
    Machine,
    ModelShape,
    ParallelShape,
    RefusedError,
    ShapeError,
    adapt,
    container_command,
    parallel_shape,
    without_flags,
)
from preflight.rendered import EngineSpec, read_engine
from tests.preflight.runs import DEV, report

H100 = Machine(gpus=1, capability=(9, 0), cuda_runtime_major=13, modules=frozenset(), gpu_name="NVIDIA H100 80GB HBM3")
QWEN35 = ModelShape(linear_attention=True, linear_key_head_dim=128)
VOLUMES = {"/compile-cache": "/work-dir/volumes/compile-cache"}


def spec(**changes: object) -> EngineSpec:
    return replace(read_engine(DEV / "rendered"), **changes)  # type: ignore[arg-type]


def run(engine: EngineSpec | None = None, machine: Machine = H100, model: ModelShape = QWEN35, **options: object) -> tuple[str, ...]:
    adapted = adapt(
        engine or spec(),
        machine,
        model_dir="/work-dir/model",
        volumes=VOLUMES,
        port=int(options.get("port", 8000)),  # type: ignore[call-overload]
        takes_gdn_flag=bool(options.get("takes_gdn_flag", True)),
        model=model,
    )
    return adapted.flags


def test_the_real_dev_runs_adaptations_are_what_adapt_gives_today() -> None:
    measured = report(DEV)
    machine = measured["machine"]
    adapted = adapt(
        spec(),
        Machine(
            gpus=machine["gpus"],
            capability=tuple(machine["capability"]),
            cuda_runtime_major=machine["cuda_runtime"],
            modules=frozenset(machine["modules"]),
        ),
        model_dir="/root/w-dev/model",
        volumes={"/compile-cache": "/root/w-dev/volumes/compile-cache"},
        port=8000,
        takes_gdn_flag=True,
        model=QWEN35,
        isolated={"HOME": "/root/w-dev/home", "TMPDIR": "/root/w-dev/tmp"},
    )
    assert [a.as_dict() for a in adapted.adaptations] == measured["adaptations"]


def test_every_other_flag_is_passed_exactly_as_rendered() -> None:
    rendered = spec().flags
    flags = run()
    assert [f for f in flags if not f.startswith(("--data-parallel-size", "--gdn-prefill-backend"))] == [
        f for f in rendered if not f.startswith("--data-parallel-size")
    ]


@pytest.mark.parametrize(("gpus", "engines"), [(1, 1), (2, 2), (4, 4), (8, 8), (16, 8)])
def test_data_parallelism_follows_the_gpus_present(gpus: int, engines: int) -> None:
    flags = run(machine=replace(H100, gpus=gpus))
    assert f"--data-parallel-size={engines}" in flags
    assert sum(f.startswith("--data-parallel-size") for f in flags) == 1


def shaped(*parallel: str) -> EngineSpec:
    """The dev render with its data-parallel flag replaced by ``parallel``."""
    return spec(flags=(*(f for f in spec().flags if not f.startswith("--data-parallel-size")), *parallel))


def test_an_engine_of_two_gpus_keeps_its_tensor_parallelism_and_counts_both() -> None:
    flags = run(shaped("--data-parallel-size=4", "--tensor-parallel-size=2"), machine=replace(H100, gpus=4))
    assert "--data-parallel-size=2" in flags and "--tensor-parallel-size=2" in flags


def test_tensor_parallel_eight_with_expert_parallelism_runs_as_rendered_on_eight_gpus() -> None:
    engine = shaped("--data-parallel-size=1", "--tensor-parallel-size=8", "--enable-expert-parallel")
    adapted = adapt(engine, replace(H100, gpus=8), model_dir="/m", volumes=VOLUMES, port=8000, takes_gdn_flag=False, model=QWEN35)
    assert [f for f in adapted.flags if f.startswith(("--data", "--tensor", "--enable-expert"))] == [
        "--data-parallel-size=1",
        "--tensor-parallel-size=8",
        "--enable-expert-parallel",
    ]
    assert not any(a.what == "--data-parallel-size" for a in adapted.adaptations)


def test_a_shape_that_does_not_fill_its_node_fails_naming_both_settings() -> None:
    # The workaround of extraArgs: the render keeps data parallel 8 and adds tensor parallel 8: 64 GPUs.
    with pytest.raises(ShapeError, match=r"llm:serving\.dataParallelSize.*llm:serving\.tensorParallelSize") as raised:
        run(spec(flags=(*spec().flags, "--tensor-parallel-size=8")), machine=replace(H100, gpus=8))
    assert "64 GPUs" in str(raised.value) and "node of 8" in str(raised.value)
    assert raised.value.setting == "llm:serving.dataParallelSize"


def test_tensor_parallelism_larger_than_this_machine_fails_naming_the_setting() -> None:
    with pytest.raises(ShapeError, match=r"tensor parallel 2.*llm:serving\.tensorParallelSize.*1 GPU") as raised:
        run(shaped("--data-parallel-size=4", "-tp", "2"), machine=H100)
    assert raised.value.setting == "llm:serving.tensorParallelSize"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ((), ParallelShape(data=1, tensor=1, pipeline=1, expert=False)),
        (("--data-parallel-size=4", "--tensor-parallel-size", "2"), ParallelShape(data=4, tensor=2, pipeline=1, expert=False)),
        (("-dp", "2", "-tp=4", "--enable-expert-parallel"), ParallelShape(data=2, tensor=4, pipeline=1, expert=True)),
        (("--pipeline-parallel-size=2", "-ep"), ParallelShape(data=1, tensor=1, pipeline=2, expert=True)),
    ],
)
def test_the_shape_is_read_from_the_rendered_command_line(flags: tuple[str, ...], expected: ParallelShape) -> None:
    assert parallel_shape(flags) == expected
    assert expected.gpus == expected.data * expected.tensor * expected.pipeline


def test_the_spaced_form_of_a_flag_is_replaced_with_its_value() -> None:
    flags = (*(f for f in spec().flags if not f.startswith("--data-parallel-size")), "--data-parallel-size", "8")
    adapted = run(spec(flags=flags))
    assert "--data-parallel-size=1" in adapted and "8" not in adapted


def test_hopper_without_cute_dsl_takes_the_triton_deltanet_prefill() -> None:
    assert "--gdn-prefill-backend=triton" in run()


@pytest.mark.parametrize(
    ("machine", "model", "takes"),
    [
        (replace(H100, modules=frozenset({"cutlass"})), QWEN35, True),
        (replace(H100, capability=(8, 0)), QWEN35, True),
        (H100, ModelShape(linear_attention=False, linear_key_head_dim=None), True),
        (H100, QWEN35, False),
        (replace(H100, capability=(10, 0), cuda_runtime_major=12), QWEN35, True),
    ],
    ids=["cute-dsl-installed", "ampere", "no-deltanet", "release-without-the-flag", "blackwell-cuda-12"],
)
def test_the_deltanet_prefill_is_left_alone_where_nothing_forces_it(machine: Machine, model: ModelShape, takes: bool) -> None:
    assert not any(f.startswith("--gdn-prefill-backend") for f in run(machine=machine, model=model, takes_gdn_flag=takes))


def test_blackwell_with_cuda_13_needs_cute_dsl_as_hopper_does() -> None:
    assert "--gdn-prefill-backend=triton" in run(machine=replace(H100, capability=(10, 0)))


def test_a_prefill_backend_the_stack_chose_is_kept() -> None:
    flags = run(spec(flags=(*spec().flags, "--gdn-prefill-backend=flashinfer")))
    assert [f for f in flags if f.startswith("--gdn-prefill-backend")] == ["--gdn-prefill-backend=flashinfer"]


def test_a_variable_on_a_volume_points_at_the_local_folder_standing_in_for_it() -> None:
    adapted = adapt(spec(), H100, model_dir="/m", volumes=VOLUMES, port=8000, takes_gdn_flag=True, model=QWEN35)
    assert adapted.env["VLLM_CACHE_ROOT"] == "/work-dir/volumes/compile-cache"
    assert adapted.env["HF_HUB_OFFLINE"] == "1"
    change = next(a for a in adapted.adaptations if a.what == "env VLLM_CACHE_ROOT")
    assert change.rendered == "/compile-cache" and "volume" in change.reason


def test_a_taken_port_is_moved_and_said_so() -> None:
    adapted = adapt(spec(), H100, model_dir="/m", volumes={}, port=8123, takes_gdn_flag=True, model=QWEN35)
    assert "--port=8123" in adapted.flags
    assert any(a.what == "--port" and a.rendered == "8000" for a in adapted.adaptations)


def test_the_mtp_variant_drops_only_the_speculative_config() -> None:
    flags = spec().flags
    assert without_flags(flags, ("--speculative-config",)) == tuple(f for f in flags if not f.startswith("--speculative-config"))


@pytest.mark.parametrize(("runtime", "gpus"), [("docker", ["--gpus", "all"]), ("podman", ["--device", "nvidia.com/gpu=all"])])
def test_the_stacks_image_runs_with_its_own_command_model_path_and_volumes(runtime: str, gpus: list[str]) -> None:
    engine = spec()
    adapted = adapt(engine, H100, model_dir=engine.model_path, volumes={}, port=8000, takes_gdn_flag=True, model=QWEN35)
    words = container_command(
        runtime, engine, adapted, name="preflight-dev", model_dir="/work-dir/model", volumes=VOLUMES, home="/work-dir/home"
    )
    assert words[:5] == [runtime, "run", "--rm", "--name", "preflight-dev"]
    assert words[5:7] == gpus
    assert f"/work-dir/model:{engine.model_path}:ro" in words
    assert "/work-dir/volumes/compile-cache:/compile-cache" in words
    assert "/work-dir/home:/root" in words
    assert "VLLM_CACHE_ROOT=/compile-cache" in words
    assert f"--shm-size={64 * 2**30}" in words
    entry = words.index("--entrypoint")
    assert words[entry + 1 : entry + 5] == ["vllm", engine.image, "serve", engine.model_path]
    assert tuple(words[entry + 5 :]) == adapted.flags


def test_an_unknown_runtime_is_refused() -> None:
    engine = spec()
    adapted = adapt(engine, H100, model_dir="/m", volumes={}, port=8000, takes_gdn_flag=True, model=QWEN35)
    with pytest.raises(RefusedError, match="docker or podman"):
        container_command("nerdctl", engine, adapted, name="x", model_dir="/m", volumes={})
