"""The stack's engine command line made runnable on this machine, changing only what the machine forces.

Each change is an ``Adaptation`` with its reason; everything else is passed exactly as rendered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from preflight.rendered import EngineSpec, flag_value

# vLLM 0.26.0 picks FlashInfer's Gated DeltaNet prefill on sm_90, and on sm_10x with head_k_dim 128 and a
# CUDA 13 runtime (vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py, _resolve_gdn_prefill_backend).
# Both paths are CuTe-DSL kernels that import the `cutlass` module of nvidia-cutlass-dsl
# (flashinfer/gdn_prefill.py raises "SM90 GDN prefill DSL kernel is unavailable" without it).
GDN_FLAG = "--gdn-prefill-backend"
CUTE_DSL_MODULE = "cutlass"
DP_FLAGS = ("--data-parallel-size", "-dp")
TP_FLAGS = ("--tensor-parallel-size", "-tp")
PP_FLAGS = ("--pipeline-parallel-size", "-pp")
EP_FLAGS = ("--enable-expert-parallel", "-ep")
# vLLM's engine argument for how weights are read; "dummy" initialises random ones (vllm/config/load.py).
LOAD_FORMAT = "--load-format"
# The settings that render the parallel flags (stacks/serving.py).
DP_SETTING = "llm:serving.dataParallelSize"
TP_SETTING = "llm:serving.tensorParallelSize"


class RefusedError(ValueError):
    """The preflight cannot run this stack here; the message says why and what to do."""


class ShapeError(RefusedError):
    """The stack's parallel shape fits neither its own node nor this machine; ``setting`` is the key to change."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class ParallelShape:
    """Data, tensor and pipeline parallelism of the rendered command line, and whether experts are spread."""

    data: int
    tensor: int
    pipeline: int
    expert: bool

    @property
    def engine_gpus(self) -> int:
        return self.tensor * self.pipeline

    @property
    def gpus(self) -> int:
        return self.data * self.engine_gpus


@dataclass(frozen=True)
class Machine:
    gpus: int
    # (major, minor) of the first GPU, as torch.cuda.get_device_capability reports it.
    capability: tuple[int, int] | None
    cuda_runtime_major: int | None
    # Optional modules the engine's Python can import that decide a kernel choice.
    modules: frozenset[str]
    gpu_name: str = ""
    # The first GPU's memory, as torch reports it (the memory plan's HBM).
    hbm_bytes: int | None = None


@dataclass(frozen=True)
class ModelShape:
    """What of the served model decides a kernel choice."""

    linear_attention: bool
    linear_key_head_dim: int | None


@dataclass(frozen=True)
class Adaptation:
    what: str
    rendered: str | None
    run: str | None
    reason: str

    def as_dict(self) -> dict[str, str | None]:
        return {"what": self.what, "rendered": self.rendered, "run": self.run, "reason": self.reason}


@dataclass(frozen=True)
class EngineRun:
    """The engine as this machine runs it: the flags after the model, the model path, the environment added."""

    model: str
    flags: tuple[str, ...]
    env: dict[str, str]
    port: int
    adaptations: tuple[Adaptation, ...]

    def flag(self, name: str) -> str | None:
        return flag_value(self.flags, name)


def _int_flag(flags: tuple[str, ...], names: tuple[str, ...]) -> int:
    for name in names:
        value = flag_value(flags, name)
        if value:
            return int(value)
    return 1


def _bool_flag(flags: tuple[str, ...], names: tuple[str, ...]) -> bool:
    value = next((v for name in names if (v := flag_value(flags, name)) is not None), None)
    present = any(arg.split("=", 1)[0] in names for arg in flags)
    return present and (value is None or value.lower() not in ("false", "0"))


def parallel_shape(flags: tuple[str, ...]) -> ParallelShape:
    """The shape the rendered flags ask vLLM for (each size defaults to 1, as in vLLM's ParallelConfig)."""
    return ParallelShape(
        data=_int_flag(flags, DP_FLAGS),
        tensor=_int_flag(flags, TP_FLAGS),
        pipeline=_int_flag(flags, PP_FLAGS),
        expert=_bool_flag(flags, EP_FLAGS),
    )


def check_node_shape(spec: EngineSpec) -> ParallelShape:
    """The rendered shape, refused when its GPUs are not the pod's (one pod takes a node's GPUs)."""
    shape = parallel_shape(spec.flags)
    if spec.gpus and shape.gpus != spec.gpus:
        raise ShapeError(
            DP_SETTING,
            f"the stack asks vLLM for data parallel {shape.data} x tensor parallel {shape.tensor}"
            + (f" x pipeline parallel {shape.pipeline}" if shape.pipeline > 1 else "")
            + f" = {shape.gpus} GPUs, on a node of {spec.gpus}: set {DP_SETTING} x {TP_SETTING} to {spec.gpus} "
            "(a tensor-parallel flag in serving.extraArgs is not counted by the render)",
        )
    return shape


def _replace_flag(flags: tuple[str, ...], names: tuple[str, ...], value: str) -> tuple[str, ...]:
    """``flags`` with every form of ``names`` dropped and ``names[0]=value`` where the first one stood."""
    out: list[str] = []
    placed = False
    skip = False
    for index, arg in enumerate(flags):
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in names:
            if "=" not in arg and index + 1 < len(flags) and not flags[index + 1].startswith("-"):
                skip = True
            if not placed:
                out.append(f"{names[0]}={value}")
                placed = True
            continue
        out.append(arg)
    if not placed:
        out.append(f"{names[0]}={value}")
    return tuple(out)


def flashinfer_gdn_prefill(machine: Machine, model: ModelShape) -> bool:
    """Whether vLLM 0.26.0's default ("auto") Gated DeltaNet prefill is FlashInfer's CuTe-DSL kernel here."""
    if not model.linear_attention or machine.capability is None:
        return False
    if machine.capability == (9, 0):
        return True
    return machine.capability[0] == 10 and model.linear_key_head_dim == 128 and (machine.cuda_runtime_major or 0) >= 13


def _under(value: str, mount: str) -> bool:
    return value == mount or value.startswith(mount.rstrip("/") + "/")


def adapt(
    spec: EngineSpec,
    machine: Machine,
    *,
    model_dir: str,
    volumes: Mapping[str, str],
    port: int,
    takes_gdn_flag: bool,
    model: ModelShape,
    isolated: Mapping[str, str] | None = None,
    full_size: bool = False,
) -> EngineRun:
    """The stack's engine adapted to ``machine``; with ``full_size``, the model at its real size with dummy weights.

    ``volumes`` maps a pod mount path to the local folder that stands in for it; ``isolated`` adds
    variables that give each start its own home and temporary folder (their caches are measured).
    Tensor, pipeline and expert parallelism are kept; only data parallelism follows the GPUs present.
    Raises ``ShapeError`` when the shape does not fill the stack's node, or one engine needs more GPUs than this machine has.
    """
    flags = spec.flags
    changes: list[Adaptation] = []
    shape = check_node_shape(spec)
    world = shape.engine_gpus
    if machine.gpus < world:
        raise ShapeError(
            TP_SETTING,
            f"one engine of this stack takes tensor parallel {shape.tensor}"
            + (f" x pipeline parallel {shape.pipeline}" if shape.pipeline > 1 else "")
            + f" ({TP_SETTING}): {world} GPUs; this machine has {machine.gpus} GPU{'s' if machine.gpus != 1 else ''}: "
            f"run the preflight on a machine with at least {world}",
        )
    dp = shape.data
    fits = max(1, machine.gpus // world)
    if dp > fits:
        flags = _replace_flag(flags, DP_FLAGS, str(fits))
        changes.append(
            Adaptation(
                "--data-parallel-size",
                str(dp),
                str(fits),
                f"the stack runs {dp} engines of {world} GPU(s) on a node of {spec.gpus or '?'} GPUs; "
                f"this machine has {machine.gpus} GPU(s), so {fits} engine(s) fit",
            )
        )
    if full_size:
        changes.append(
            Adaptation(
                "model",
                spec.model_path,
                model_dir,
                "the served model's config.json at its real size and quantization, with a small tokenizer whose special-token "
                "ids are set into it (no weights are downloaded)",
            )
        )
        rendered_format = flag_value(flags, LOAD_FORMAT)
        flags = _replace_flag(flags, (LOAD_FORMAT,), "dummy")
        changes.append(
            Adaptation(
                LOAD_FORMAT,
                rendered_format,
                "dummy",
                "vLLM builds the model from config.json with random weights of the checkpoint's quantization: its memory and "
                "kernels are the real model's, its answers are noise",
            )
        )
    else:
        changes.append(
            Adaptation(
                "model",
                spec.model_path,
                model_dir,
                "a miniature of the served model: same architecture and layer pattern, random weights (no weights are downloaded)",
            )
        )
    if port != spec.port:
        flags = _replace_flag(flags, ("--port",), str(port))
        changes.append(
            Adaptation("--port", str(spec.port), str(port), f"the port given with --port, or a free one when {spec.port} is taken here")
        )
    needs_cute_dsl = flashinfer_gdn_prefill(machine, model) and CUTE_DSL_MODULE not in machine.modules
    if takes_gdn_flag and flag_value(flags, GDN_FLAG) is None and needs_cute_dsl:
        flags = (*flags, f"{GDN_FLAG}=triton")
        arch = f"sm_{machine.capability[0]}{machine.capability[1]}" if machine.capability else "this GPU"
        changes.append(
            Adaptation(
                GDN_FLAG,
                None,
                "triton",
                f"on {arch} vLLM's default Gated DeltaNet prefill is FlashInfer's CuTe-DSL kernel, which needs "
                f"nvidia-cutlass-dsl (module `{CUTE_DSL_MODULE}`), not installed here; without it the engine reports "
                "healthy and fails at the first prefill. The stack's image must contain that package",
            )
        )
    env: dict[str, str] = {}
    for name, value in spec.env.items():
        mount = next((m for m in sorted(volumes, key=len, reverse=True) if _under(value, m)), None)
        if mount is None:
            env[name] = value
            continue
        local = str(PurePosixPath(volumes[mount]) / PurePosixPath(value).relative_to(mount))
        env[name] = local
        changes.append(Adaptation(f"env {name}", value, local, f"the pod mounts a volume at {mount}; a local folder stands in for it"))
    for name in spec.env_from_refs:
        changes.append(Adaptation(f"env {name}", "(from a secret or field)", None, "its value is not in the render; left unset"))
    for name, value in (isolated or {}).items():
        env[name] = value
        changes.append(
            Adaptation(
                f"env {name}",
                None,
                value,
                "gives each start its own folder, so the caches a start writes there can be measured, kept or dropped as a new pod would",
            )
        )
    return EngineRun(model=model_dir, flags=flags, env=env, port=port, adaptations=tuple(changes))


def without_flags(flags: tuple[str, ...], names: tuple[str, ...]) -> tuple[str, ...]:
    """``flags`` with every form of ``names`` dropped (a variant for the throughput comparison)."""
    out: list[str] = []
    skip = False
    for index, arg in enumerate(flags):
        if skip:
            skip = False
            continue
        if arg.split("=", 1)[0] in names:
            skip = "=" not in arg and index + 1 < len(flags) and not flags[index + 1].startswith("-")
            continue
        out.append(arg)
    return tuple(out)


def container_command(
    runtime: str,
    spec: EngineSpec,
    run: EngineRun,
    *,
    name: str,
    model_dir: str,
    volumes: Mapping[str, str],
    home: str | None = None,
) -> list[str]:
    """``docker run`` or ``podman run`` of the stack's own image with the stack's command line.

    The miniature is mounted at the rendered model path and each volume at its mount path, so the
    command line and environment stay the pod's; ``home`` mounts a folder at the image's home
    (root's) to keep the caches written there between starts.
    """
    if runtime not in ("docker", "podman"):
        raise RefusedError(f"unknown container runtime {runtime!r}; use docker or podman")
    gpus = ["--gpus", "all"] if runtime == "docker" else ["--device", "nvidia.com/gpu=all"]
    words = [runtime, "run", "--rm", "--name", name, *gpus, "-p", f"{run.port}:{run.port}"]
    if spec.shm_bytes:
        words.append(f"--shm-size={spec.shm_bytes}")
    words += ["-v", f"{model_dir}:{spec.model_path}:ro"]
    for mount, local in sorted(volumes.items()):
        words += ["-v", f"{local}:{mount}"]
    if home:
        words += ["-v", f"{home}:/root"]
    for key, value in sorted(spec.env.items()):
        words += ["-e", f"{key}={value}"]
    # The pod's command replaces the image's entrypoint.
    words += ["--entrypoint", spec.launcher[0], spec.image, *spec.launcher[1:], spec.model_path, *run.flags]
    return words
