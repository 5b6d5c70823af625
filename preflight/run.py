"""The preflight's steps: read the render, check the release, build the miniature, start the engine, measure, judge.

This is the shell around the pure modules; ``report`` turns what it gathered into the verdict.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from facts.vllm import facts, supported_releases, tagged_release
from preflight import bench, caches, drain, full_size, logscan, metrics, miniature, report
from preflight.adapt import (
    EngineRun,
    Machine,
    RefusedError,
    ShapeError,
    adapt,
    check_node_shape,
    container_command,
    parallel_shape,
    without_flags,
)
from preflight.engine import Engine
from preflight.probes import completion, http
from preflight.rendered import EngineSpec, flag_names, queries, read_engine, read_prepared, vllm_reads

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
# Machine facts, read by the engine's own Python (local) or the image's (container).
PROBE = (
    "import importlib.util, json, torch\n"
    "n = torch.cuda.device_count()\n"
    "print(json.dumps({'gpus': n, 'capability': list(torch.cuda.get_device_capability(0)) if n else None,\n"
    " 'name': torch.cuda.get_device_name(0) if n else '', 'cuda': torch.version.cuda,\n"
    " 'memory': torch.cuda.get_device_properties(0).total_memory if n else None,\n"
    " 'modules': [m for m in ('cutlass', 'flashinfer_cubin', 'flashinfer_jit_cache') if importlib.util.find_spec(m)]}))\n"
)
COMPARISONS = ("no-mtp", "defaults")


@dataclass(frozen=True)
class Options:
    stack: str
    rendered: Path
    work: Path
    engine: str = "auto"
    starts: tuple[str, ...] = ("cold", "all-caches")
    compare: tuple[str, ...] = ()
    prompts: int = 300
    ready_timeout: float = 1500.0
    first_answer_timeout: float = 900.0
    first_answer_budget: float = 10.0
    drain: bool = True
    drain_requests: int = 32
    observe_after_grace: float = 30.0
    bench_timeout: float = 600.0
    port: int | None = None  # None: the stack's, or a free one when that is taken
    # "miniature", or "full": the stack's model at its real size with dummy weights (miniature.SIZES).
    size: str = "miniature"
    # With several models: the replica set (Deployment) of the model this run checks.
    deployment: str | None = None


class Progress:
    """One line per step on stderr, with the seconds since the preflight began."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self, text: str) -> None:
        print(f"[preflight +{time.monotonic() - self.t0:6.0f}s] {text}", file=sys.stderr, flush=True)


def free_port(preferred: int) -> int:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", preferred)) != 0:
            return preferred
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        return int(spare.getsockname()[1])


def choose_engine(wanted: str) -> str:
    """``local`` (a vLLM installed here) or a container runtime; ``auto`` takes a runtime when there is one."""
    if wanted != "auto":
        return wanted
    return next((runtime for runtime in ("docker", "podman") if shutil.which(runtime)), "local")


def installed_release() -> str:
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        raise RefusedError(
            "no vLLM is installed in this Python and no Docker or Podman was found: install a release the project covers"
        ) from None


def covered(release: str, where: str) -> None:
    """Refuses a release the project's vLLM facts do not cover."""
    if release not in supported_releases():
        raise RefusedError(
            f"vLLM {release} ({where}) is not covered by the project's vLLM facts (facts/data/vllm/), which cover "
            f"{', '.join(supported_releases())}; run one of those, or add the release's facts with dev/vllm_facts.py"
        )


def probe_machine(argv: list[str]) -> Machine:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        raise RefusedError(f"could not read the GPUs ({' '.join(argv[:3])} ...): {done.stderr.strip()[-400:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if not found["gpus"]:
        raise RefusedError("no GPU is visible to the engine's Python (torch.cuda.device_count() is 0)")
    major, minor = found["capability"]
    cuda = str(found.get("cuda") or "")
    return Machine(
        gpus=int(found["gpus"]),
        capability=(int(major), int(minor)),
        cuda_runtime_major=int(cuda.split(".")[0]) if cuda else None,
        modules=frozenset(found["modules"]),
        gpu_name=str(found["name"]),
        hbm_bytes=int(found["memory"]) if found.get("memory") else None,
    )


def model_of(outputs: dict[str, Any], spec: EngineSpec, prepared: dict[str, Any]) -> str:
    """The Hugging Face id of the stack's model: the preparation's, the render's outputs, or the served name."""
    if prepared.get("model"):
        return str(prepared["model"])
    rendered = str((outputs.get("serving") or {}).get("model") or "")
    return rendered.split("@", 1)[0] if rendered else spec.served_name


class Preflight:
    """One run over one stack's render; ``result`` is what the report is made of."""

    def __init__(self, options: Options, progress: Callable[[str], None]) -> None:
        self.o = options
        self.progress = progress
        self.result: dict[str, Any] = {"stack": options.stack, "notes": []}
        self.work = options.work.resolve()
        self.clean_exit: float | None = None

    # -- reading and checking -------------------------------------------------------------------------
    def read(self) -> None:
        o = self.o
        self.spec = read_engine(o.rendered, o.deployment)
        # Before anything is probed or built: a shape that does not fill its node never starts.
        check_node_shape(self.spec)
        outputs_path = o.rendered / "outputs.yaml"
        self.outputs: dict[str, Any] = yaml.safe_load(outputs_path.read_text(encoding="utf-8")) if outputs_path.exists() else {}
        self.prepared = read_prepared(o.rendered)
        if o.deployment is not None:
            self.prepared = self.prepared.get("models", {}).get(o.deployment, {})
        self.reads = vllm_reads(queries(o.rendered))
        self.mode = choose_engine(o.engine)
        stack_release = str(self.outputs.get("vllmVersion") or tagged_release(self.spec.image) or "")
        if self.mode == "local":
            release = installed_release()
            covered(release, f"installed in {sys.executable}")
        else:
            release = tagged_release(self.spec.image) or stack_release
            covered(release, f"the stack's image {self.spec.image}")
        self.facts = facts(release)
        names = sorted(set(flag_names(self.spec.flags)))
        unknown = [name for name in names if not self.facts.takes(name)]
        self.result.update(
            engine={
                "mode": self.mode,
                "release": release,
                "stack_release": stack_release,
                "python": sys.executable,
                "image": self.spec.image,
            },
            rendered={
                "deployment": self.spec.deployment,
                "command": [*self.spec.launcher, self.spec.model_path, *self.spec.flags],
                "env": self.spec.env,
                "grace_seconds": self.spec.grace_seconds,
                "prestop_sleep_seconds": self.spec.prestop_sleep_seconds,
                "shutdown_timeout": self.spec.shutdown_timeout,
                "probes": self.spec.probes,
                "gpus": self.spec.gpus,
            },
            flags={"names": names, "unknown_to_release": unknown},
            reads=self.reads,
        )
        if stack_release and stack_release != release:
            self.result["notes"].append(f"the stack pins vLLM {stack_release}; this preflight runs {release}")

    # -- the machine and the engine's command line ----------------------------------------------------
    def container_base(self) -> list[str]:
        gpus = ["--gpus", "all"] if self.mode == "docker" else ["--device", "nvidia.com/gpu=all"]
        return [self.mode, "run", "--rm", *gpus]

    def python_argv(self, *args: str) -> list[str]:
        if self.mode == "local":
            return [sys.executable, *args]
        return [*self.container_base(), "--entrypoint", "python3", self.spec.image, *args]

    def setup(self) -> None:
        self.machine = probe_machine(self.python_argv("-c", PROBE))
        m = self.machine
        self.result["machine"] = {
            "gpus": m.gpus,
            "gpu": m.gpu_name,
            "capability": list(m.capability or ()),
            "cuda_runtime": m.cuda_runtime_major,
            "modules": sorted(m.modules),
        }
        model = model_of(self.outputs, self.spec, self.prepared)
        source = miniature.find_source(model, os.environ)
        self.model_id, self.model_config = model, source.config
        self.shape = miniature.shape(source.config)
        self.model_dir = self.work / ("model-full" if self.full else "model")
        tensor_parallel = parallel_shape(self.spec.flags).tensor
        self.progress(f"{'full-size model' if self.full else 'miniature'} of {model} from the {source.provenance}")
        made = self.make_miniature(model, tensor_parallel)
        self.result["model"] = {
            "id": model,
            "size": self.o.size,
            "kind": miniature.architecture_kind(source.config),
            "source": source.provenance,
            "miniature": made,
            "config": miniature.full_size_config(source.config)
            if self.full
            else miniature.miniature_config(source.config, tensor_parallel=tensor_parallel),
        }
        self.volume_dirs = {
            mount.path: str(self.work / "volumes" / mount.volume)
            for mount in self.spec.mounts
            if mount.kind not in ("emptyDir",) and not self.spec.model_path.startswith(mount.path.rstrip("/") + "/")
        }
        cache_root = self.spec.env.get("VLLM_CACHE_ROOT")
        holder = next((m for m in self.volume_dirs if cache_root and (cache_root == m or cache_root.startswith(m + "/"))), None)
        self.roots = {
            "compile cache": Path(self.volume_dirs[holder]) if holder else self.work / "home" / ".cache" / "vllm",
            "home": self.work / "home",
            "tmp": self.work / "tmp",
        }
        isolated = {"HOME": str(self.roots["home"]), "TMPDIR": str(self.roots["tmp"])} if self.mode == "local" else {}
        self.port = self.o.port or free_port(self.spec.port)
        self.run = adapt(
            self.spec,
            m,
            model_dir=str(self.model_dir) if self.mode == "local" else self.spec.model_path,
            volumes=self.volume_dirs if self.mode == "local" else {},
            port=self.port,
            takes_gdn_flag=self.facts.takes("--gdn-prefill-backend"),
            model=self.shape,
            isolated=isolated,
            full_size=self.full,
        )
        self.result["adaptations"] = [a.as_dict() for a in self.run.adaptations]
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def full(self) -> bool:
        return self.o.size == "full"

    def make_miniature(self, model: str, tensor_parallel: int) -> dict[str, Any]:
        self.model_dir.mkdir(parents=True, exist_ok=True)
        shape = ["--size", self.o.size, "--tensor-parallel", str(tensor_parallel)]
        if self.mode == "local":
            argv = [sys.executable, "-m", "preflight.miniature", str(self.model_dir), "--model", model, *shape]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))}
        else:
            argv = [
                *self.container_base(),
                "-v",
                f"{PACKAGE_ROOT}:/preflight-src:ro",
                "-v",
                f"{self.model_dir}:/out",
                "-e",
                "PYTHONPATH=/preflight-src",
                "--entrypoint",
                "python3",
                self.spec.image,
                "-m",
                "preflight.miniature",
                "/out",
                "--model",
                model,
                *shape,
            ]
            env = dict(os.environ)
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=1200)
        if done.returncode != 0:
            raise RuntimeError(f"making the miniature failed: {done.stderr.strip()[-1500:]}")
        made: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return made

    def engine_argv(self, run: EngineRun, name: str, keep_home: bool) -> tuple[list[str], dict[str, str], list[str] | None]:
        if self.mode == "local":
            argv = [*bench.python_launcher(), "serve", run.model, *run.flags]
            return argv, {**os.environ, **run.env}, None
        container = f"preflight-{self.o.stack}-{name}"
        argv = container_command(
            self.mode,
            self.spec,
            run,
            name=container,
            model_dir=str(self.model_dir),
            volumes=self.volume_dirs,
            home=str(self.roots["home"]) if keep_home else None,
        )
        return argv, dict(os.environ), [self.mode, "kill", container]

    # -- one start --------------------------------------------------------------------------------------
    def start(
        self, label: str, mode: str, run: EngineRun, *, check_metrics: bool, bench_name: str | None, drain_after: bool
    ) -> dict[str, Any]:
        """One start of the engine: caches kept or dropped by ``mode``, Ready, first answers, then the asked measurements."""
        dropped = caches.prepare_start(self.roots, mode)
        before = {name: caches.inventory(root) for name, root in self.roots.items()}
        argv, env, stop = self.engine_argv(run, label, keep_home=mode == "all-caches")
        log = self.work / f"{label}.log"
        self.progress(f"{label}: start, caches dropped: {', '.join(dropped) or 'none'}")
        engine = Engine(argv, env, log, cwd=self.work, stop_argv=stop)
        record: dict[str, Any] = {"name": label, "mode": mode, "log": log.name, "dropped": dropped}
        try:
            ready = engine.wait_ready(self.url, self.o.ready_timeout, lambda text: self.progress(f"{label}: {text}"))
            record["ready_s"] = ready
            if ready is None:
                why = f"exited rc={engine.returncode}" if not engine.running else f"gave no /health 200 within {self.o.ready_timeout:.0f} s"
                errors = [line for line in engine.tail if "Error" in line or "error" in line][-3:]
                record["error"] = f"the engine {why}; last errors: {' | '.join(errors) or engine.last_line()}"
                self.progress(f"{label}: {record['error']}")
                return record
            self.progress(f"{label}: /health 200 after {ready:.1f} s; a completion and two chat requests")
            record["requests"] = self.first_requests(record)
            if check_metrics:
                _, text, _ = http("GET", self.url + "/metrics")
                (self.work / f"{label}-metrics.txt").write_text(text, encoding="utf-8")
                record["metrics"] = metrics.check(self.reads, text, self.spec.served_name).as_dict()
                record["ttft_largest_bucket"] = metrics.largest_bucket(text, "vllm:time_to_first_token_seconds")
            if bench_name:
                record["throughput"] = self.throughput(bench_name, engine)
            if drain_after:
                record["drain"] = self.drain(engine)
            else:
                took = engine.stop(60)
                record["sigterm_to_exit_idle_s"] = took
                if took is not None:
                    self.clean_exit = took if self.clean_exit is None else max(self.clean_exit, took)
        finally:
            engine.close()
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
            record["scan"] = logscan.scan(lines).as_dict()
            record["project_parser"] = logscan.parse_with_project(lines, engine.started_at)
            if self.full:
                record.update(self.full_size_figures(lines, run))
            after = {name: caches.inventory(root) for name, root in self.roots.items()}
            record["caches"] = {name: {"before": before[name], "written": caches.written(before[name], after[name])} for name in self.roots}
        return record

    def full_size_figures(self, lines: list[str], run: EngineRun) -> dict[str, Any]:
        """Each engine's memory lines held to the memory plan of the command line it ran on this GPU, and the start by phase."""
        memory = full_size.read_memory(lines)
        figures: dict[str, Any] = {
            "memory": {engine: figures.as_dict() for engine, figures in memory.items()},
            "phases_full_size": full_size.start_phases(lines).as_dict(),
        }
        m = self.machine
        try:
            if m.hbm_bytes is None or m.capability is None:
                raise full_size.NoPlanError("the GPU's memory was not read")
            plan = full_size.plan_for(
                self.model_config,
                self.model_id,
                run.flags,
                {**self.spec.env, **run.env},
                hbm_bytes=m.hbm_bytes,
                release=self.facts.release,
                capability=m.capability,
            )
        except full_size.NoPlanError as no_plan:
            figures["memory_plan"] = {"none": f"not held to a plan: {no_plan}"}
            return figures
        figures["memory_plan"] = plan
        figures["memory_checks"] = [check.as_dict() for check in full_size.against_plan(memory, plan)]
        return figures

    def first_requests(self, record: dict[str, Any]) -> dict[str, Any]:
        served = self.spec.served_name
        ready_at = time.monotonic()
        timeout = self.o.first_answer_timeout
        requests = {
            "completion": completion(
                self.url + "/v1/completions",
                {"model": served, "prompt": "The capital of France is", "max_tokens": 16, "temperature": 0},
                timeout=timeout,
            ),
            "chat": completion(
                self.url + "/v1/chat/completions",
                {"model": served, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16, "temperature": 0},
                timeout=timeout,
            ),
            "chat_stream": completion(
                self.url + "/v1/chat/completions",
                {
                    "model": served,
                    "messages": [{"role": "user", "content": "Count to five."}],
                    "max_tokens": 16,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
                timeout=timeout,
            ),
        }
        first = requests["completion"]
        record["first_answer_after_ready_s"] = first["end"] - ready_at if first.get("ending") == "answered" else None
        for request in requests.values():
            for key in ("start", "end", "first_chunk", "last_chunk"):
                if isinstance(request.get(key), float):
                    request[key] = round(request[key] - ready_at, 3)
        self.progress(
            f"{record['name']} start: first answer {record['first_answer_after_ready_s']} s after Ready "
            + ", ".join(f"{name} {r.get('ending')}" for name, r in requests.items())
        )
        return requests

    def throughput(self, name: str, engine: Engine) -> dict[str, Any]:
        client = self.prepared.get("bench_client")
        if not client:
            return {"error": "no benchmark client: run `python -m preflight <stack> --prepare` where the project is installed"}
        result_dir = self.work / "bench"
        result_dir.mkdir(exist_ok=True)
        launcher = bench.python_launcher() if self.mode == "local" else ["vllm"]
        argv, changes = bench.client_argv(
            client,
            base_url=self.url,
            tokenizer=str(self.model_dir),
            prompts=self.o.prompts,
            result_dir=str(result_dir),
            result_file=f"{name}.json",
            launcher=launcher,
        )
        self.result.setdefault("bench", {"client": client, "adaptations": [c.as_dict() for c in changes]})
        self.progress(f"throughput ({name}): {self.o.prompts} prompts through the stack's benchmark client")
        engine.note(f"throughput run ({name})")
        env = {**os.environ, **(self.run.env if self.mode == "local" else {})}
        summary = bench.run(
            argv, env=env, log=self.work / f"bench-{name}.log", result=result_dir / f"{name}.json", timeout=self.o.bench_timeout
        )
        self.progress(f"throughput ({name}): {report.bench_line(summary)}")
        return summary

    def drain(self, engine: Engine) -> dict[str, Any]:
        spec = self.spec
        max_len = int(self.run.flag("--max-model-len") or 2048)
        plan = drain.DrainPlan(
            grace_seconds=spec.grace_seconds,
            prestop_seconds=spec.prestop_sleep_seconds,
            shutdown_timeout=spec.shutdown_timeout or 0.0,
            streamed=self.o.drain_requests,
            plain=self.o.drain_requests,
            max_tokens=max(16, max_len - 64),
            observe_after_grace=self.o.observe_after_grace,
        )
        record = drain.run(engine, self.url, "127.0.0.1", self.port, spec.served_name, plan, self.progress)
        return record

    # -- the whole run ----------------------------------------------------------------------------------
    def execute(self) -> dict[str, Any]:
        self.work.mkdir(parents=True, exist_ok=True)
        self.read()
        self.setup()
        self.result["budgets"] = {"first_answer_after_ready_s": self.o.first_answer_budget}
        starts: list[dict[str, Any]] = []
        self.result["starts"] = starts
        for index, mode in enumerate(self.o.starts):
            last = index == len(self.o.starts) - 1
            record = self.start(
                f"{index + 1}-{mode}",
                mode,
                self.run,
                check_metrics=index == 0 or last,
                bench_name="stack" if last and self.o.prompts else None,
                drain_after=last and self.o.drain,
            )
            starts.append(record)
            if record.get("ready_s") is None:
                break
        self.result["clean_exit_s"] = self.clean_exit
        self.result["caches"] = caches.summary(starts)
        self.result["cache_dirs"] = [c.__dict__ for c in caches.CACHE_DIRS]
        if self.o.compare and starts and starts[-1].get("ready_s") is not None:
            comparisons: dict[str, Any] = {}
            self.result["comparisons"] = comparisons
            for name in self.o.compare:
                comparisons[name] = self.compare(name)
        return self.result

    def compare(self, name: str) -> dict[str, Any]:
        """The throughput of a variant of the command line, every cache kept from the runs before."""
        if name == "no-mtp":
            run = replace(self.run, flags=without_flags(self.run.flags, ("--speculative-config",)))
            what = "the stack's flags without --speculative-config"
        elif name == "defaults":
            # vLLM's defaults are one engine of one GPU, whatever the node holds.
            bare = replace(self.spec, flags=(f"--served-model-name={self.spec.served_name}", f"--port={self.spec.port}"), gpus=1)
            forced = adapt(
                bare,
                self.machine,
                model_dir=self.run.model,
                volumes=self.volume_dirs if self.mode == "local" else {},
                port=self.port,
                takes_gdn_flag=self.facts.takes("--gdn-prefill-backend"),
                model=self.shape,
                isolated={"HOME": str(self.roots["home"]), "TMPDIR": str(self.roots["tmp"])} if self.mode == "local" else {},
                full_size=self.full,
            )
            run = forced
            what = "vLLM's defaults: the served name, the port and what this machine forces"
        else:
            raise RefusedError(f"unknown comparison {name!r}; one of {', '.join(COMPARISONS)}")
        record = self.start(f"compare-{name}", "all-caches", run, check_metrics=False, bench_name=name, drain_after=False)
        return {"what": what, "flags": list(run.flags), "start": record}


def execute(options: Options, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Runs the preflight; the result is also written to ``<work>/report.json`` and ``report.txt``."""
    runner = Preflight(options, progress or Progress())
    try:
        result = runner.execute()
    except ShapeError as shape:
        result = runner.result
        result["shape"] = {"setting": shape.setting, "error": str(shape)}
    except RefusedError as refused:
        result = runner.result
        result["refused"] = str(refused)
    result["verdict"] = report.verdict(result)
    options.work.mkdir(parents=True, exist_ok=True)
    (options.work / "report.json").write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    (options.work / "report.txt").write_text(report.text(result), encoding="utf-8")
    return result
