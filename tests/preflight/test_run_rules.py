"""The preflight's steps one at a time: the dev stack's real render, stand-in tools, a local server for the engine's API.

A stand-in program (``stand_in``) plays the engine's Python, Docker and Podman: it logs each call and answers as
each would (the machine probe's JSON, the miniature's summary, a benchmark client, an engine that waits for
SIGTERM). The engine's HTTP API is a server in the test process. The engine module's waits run on a clock of
their own, so a start takes milliseconds. The whole command, end to end, is tests/preflight/test_shell.py.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import pytest

import preflight.drain
import preflight.engine
from preflight import caches, report, run
from preflight.adapt import EngineRun, Machine, RefusedError
from preflight.engine import Engine
from preflight.miniature import find_source, miniature_config
from preflight.rendered import read_engine
from preflight.run import COMPARISONS, PROBE, Options, Preflight, Progress, choose_engine, covered, free_port, model_of, probe_machine
from tests.http_stand_in import serving
from tests.preflight.runs import DEV

RENDERED = DEV / "rendered"
SPEC = read_engine(RENDERED)
MODEL = "Qwen/Qwen3.5-27B-FP8"
HOPPER = {"gpus": 8, "capability": [9, 0], "name": "NVIDIA H100", "cuda": "12.9", "modules": []}
MACHINE = {"gpus": 8, "capability": [10, 0], "name": "NVIDIA B200", "cuda": "12.9", "modules": ["flashinfer_cubin", "cutlass"]}

STAND_IN = """
import json, os, pathlib, signal, sys, time
args = sys.argv[1:]
with open(os.environ["STAND_IN_CALLS"], "a") as calls:
    calls.write(json.dumps({"tool": os.path.basename(sys.argv[0]), "argv": args, "pythonpath": os.environ.get("PYTHONPATH"),
                            "home": os.environ.get("HOME"), "tmpdir": os.environ.get("TMPDIR"), "cwd": os.getcwd(),
                            "cache_root": os.environ.get("VLLM_CACHE_ROOT")}) + "\\n")
behaviour = os.environ.get("STAND_IN", "")
if "-c" in args:
    print("a warning first")
    print(os.environ.get("STAND_IN_MACHINE", ""))
    if behaviour == "no-gpu-read":
        print("RuntimeError: " + "x" * 500, file=sys.stderr)
        sys.exit(1)
elif "preflight.miniature" in args:
    if behaviour == "no-miniature":
        print("E" * 1400 + "OSError: disk full" + "F" * 100, file=sys.stderr)
        sys.exit(1)
    print("building")
    print("writing weights")
    print(json.dumps({"weights": "written", "out": args[args.index("preflight.miniature") + 1]}))
elif args[:1] == ["kill"]:
    # As `docker kill --signal=...`: the signal goes to the container's first process.
    pid = int(pathlib.Path(os.environ["STAND_IN_CONTAINERS"], args[1]).read_text())
    os.kill(pid, getattr(signal, args[2].split("=")[1]))
elif "bench" in args:
    print("benchmark client")
    if behaviour == "slow-bench":
        time.sleep(5)
elif "serve" in args:
    if behaviour == "crash":
        for line in ("loading", "Error: zero", "ValueError: first", "an error in the middle", "RuntimeError: last", "shutting down"):
            print(line, flush=True)
        sys.exit(1)
    if "--name" in args:
        pathlib.Path(os.environ["STAND_IN_CONTAINERS"], args[args.index("--name") + 1]).write_text(str(os.getpid()))
    cache = pathlib.Path(os.environ.get("HOME", "/nonexistent")) / ".triton" / "cache" / "k"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "kernel.cubin").write_bytes(b"12345")
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(0))
    print("(APIServer pid=7) INFO: Starting to load model /models/m", flush=True)
    if "--load-format=dummy" in args:
        print("(EngineCore_DP0 pid=8) INFO: Model loading took 28.99 GiB memory and 9.8 seconds", flush=True)
        print("(EngineCore_DP0 pid=8) INFO: Available KV cache memory: 41.05 GiB", flush=True)
        print("(EngineCore_DP0 pid=8) INFO: GPU KV cache size: 185,949 tokens", flush=True)
    print("(APIServer pid=7) INFO: Starting vLLM server on http://0.0.0.0:8000", flush=True)
    print("INFO: Application startup complete.", flush=True)
    if os.environ.get("STAND_IN_UP"):
        pathlib.Path(os.environ["STAND_IN_UP"]).write_text("up")
    time.sleep(30)
"""


@dataclass
class Tools:
    bin: Path
    calls_file: Path

    def calls(self) -> list[dict[str, Any]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines()]


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tools:
    """``python`` (as sys.executable), ``docker`` and ``podman``: the stand-in, alone on the PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("python", "docker", "podman", "vllm"):
        tool = folder / name
        tool.write_text(f"#!{sys.executable}\n{STAND_IN}")
        tool.chmod(0o755)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STAND_IN_CALLS", str(calls))
    monkeypatch.setenv("STAND_IN_MACHINE", json.dumps(MACHINE))
    (tmp_path / "containers").mkdir()
    monkeypatch.setenv("STAND_IN_CONTAINERS", str(tmp_path / "containers"))
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setattr(sys, "executable", str(folder / "python"))
    return Tools(folder, calls)


class Clock:
    """``time`` for the engine module: sleeping moves this clock, and yields a little for real.

    With ``hold``, the first sleep waits (really) for that file, so the engine is known to be up.
    """

    def __init__(self, hold: Path | None = None) -> None:
        self.now = 1000.0
        self.hold = hold

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if self.hold is not None:
            deadline = time.monotonic() + 10
            while not self.hold.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.05)
            self.hold = None
        self.now += seconds
        time.sleep(0.005)


def _quick(monkeypatch: pytest.MonkeyPatch, hold: Path | None = None) -> None:
    clock = Clock(hold)
    monkeypatch.setattr(preflight.engine, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))


@pytest.fixture
def quick_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    _quick(monkeypatch)


class Api(BaseHTTPRequestHandler):
    """The engine's OpenAI-compatible API: /health, /metrics, completions and chat (plain or streamed)."""

    protocol_version = "HTTP/1.1"
    bodies: ClassVar[list[tuple[str, dict[str, Any]]]] = []
    failing: ClassVar[set[str]] = set()
    # /health answers 200 once this file is there (the stand-in engine writes it when it is up), or at once.
    up_file: ClassVar[Path | None] = None
    metrics = (DEV / "1-cold-metrics.txt").read_bytes()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200 if Api.up_file is None or Api.up_file.exists() else 503, b"")
        elif self.path == "/metrics":
            self._send(200, self.metrics, "text/plain")
        else:
            self._send(404, b"")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Api.bodies.append((self.path, body))
        if self.path in Api.failing:
            self._send(500, b"engine error")
        elif body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = {"choices": [{"delta": {"content": "one"}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
            self.close_connection = True
        elif self.path == "/v1/completions":
            self._send(200, json.dumps({"choices": [{"text": " Paris", "finish_reason": "length"}]}).encode())
        else:
            self._send(200, json.dumps({"choices": [{"message": {"content": "Hello"}, "finish_reason": "stop"}]}).encode())


@pytest.fixture
def api() -> Iterator[str]:
    Api.bodies, Api.failing, Api.up_file = [], set(), None
    with serving(Api) as url:
        yield url


def options(tmp_path: Path, **given: Any) -> Options:
    return Options(stack="dev", rendered=RENDERED, work=tmp_path / "work", **given)


@pytest.fixture
def notes() -> list[str]:
    return []


def ready(tmp_path: Path, notes: list[str], engine: str, **given: Any) -> Preflight:
    """A preflight that has read the render and set up the machine and the miniature (through the stand-ins)."""
    preflight = Preflight(options(tmp_path, engine=engine, **given), notes.append)
    preflight.work.mkdir(parents=True, exist_ok=True)
    preflight.read()
    preflight.setup()
    return preflight


def _closed_port() -> int:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        return int(spare.getsockname()[1])


# -- the small rules --------------------------------------------------------------------------------


def test_progress_prints_one_line_with_the_seconds_since_it_began(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress()
    progress("reading the render")
    progress.t0 -= 125.4
    progress("waiting")
    assert capsys.readouterr().err == "[preflight +     0s] reading the render\n[preflight +   125s] waiting\n"


def test_a_free_preferred_port_is_kept_and_a_taken_one_replaced() -> None:
    closed = _closed_port()
    assert free_port(closed) == closed
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held = taken.getsockname()[1]
        other = free_port(held)
        # One the kernel hands out: an ephemeral port, never a well-known one.
        assert other != held and other >= 1024
    with socket.socket() as check:
        check.bind(("127.0.0.1", other))


@pytest.mark.parametrize(
    ("on_path", "wanted", "chosen"),
    [
        ({"docker", "podman"}, "auto", "docker"),
        ({"podman"}, "auto", "podman"),
        (set(), "auto", "local"),
        ({"docker"}, "local", "local"),
        (set(), "podman", "podman"),
    ],
)
def test_auto_takes_docker_then_podman_then_the_local_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_path: set[str], wanted: str, chosen: str
) -> None:
    for name in on_path:
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert choose_engine(wanted) == chosen


def _vllm(site: Path, release: str) -> None:
    (site / f"vllm-{release}.dist-info").mkdir(parents=True)
    (site / f"vllm-{release}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {release}\n")


def test_the_installed_release_is_read_from_its_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _vllm(tmp_path, "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run.installed_release() == "0.26.0"


def test_no_installed_vllm_is_refused_saying_what_to_install() -> None:
    with pytest.raises(RefusedError) as refused:
        run.installed_release()
    assert str(refused.value) == (
        "no vLLM is installed in this Python and no Docker or Podman was found: install a release the project covers"
    )
    assert refused.value.__suppress_context__


def test_an_uncovered_release_is_refused_in_full() -> None:
    covered("0.18.1", "here")
    with pytest.raises(RefusedError) as refused:
        covered("0.19.0", "the stack's image x:v0.19.0")
    assert str(refused.value) == (
        "vLLM 0.19.0 (the stack's image x:v0.19.0) is not covered by the project's vLLM facts (facts/data/vllm/), which cover "
        "0.18.1, 0.26.0, 0.33.0; run one of those, or add the release's facts with dev/vllm_facts.py"
    )


def _probe(printed: str, code: int = 0, stderr: str = "") -> list[str]:
    program = f"import sys\nprint('a warning')\nprint({printed!r})\nsys.stderr.write({stderr!r})\nsys.exit({code})\n"
    return [sys.executable, "-c", program, "extra"]


def test_the_machine_is_read_from_the_probes_last_line() -> None:
    assert probe_machine(_probe(json.dumps(MACHINE))) == Machine(
        gpus=8, capability=(10, 0), cuda_runtime_major=12, modules=frozenset({"flashinfer_cubin", "cutlass"}), gpu_name="NVIDIA B200"
    )


@pytest.mark.parametrize("cuda", [None, ""])
def test_a_torch_without_cuda_has_no_runtime(cuda: str | None) -> None:
    found = probe_machine(_probe(json.dumps({**MACHINE, "cuda": cuda, "gpus": 1})))
    assert found.cuda_runtime_major is None and found.gpus == 1


def test_a_probe_without_cuda_key_has_no_runtime() -> None:
    found = probe_machine(_probe(json.dumps({k: v for k, v in MACHINE.items() if k != "cuda"})))
    assert found.cuda_runtime_major is None


def test_a_probe_that_fails_is_refused_with_its_command_and_the_end_of_its_error() -> None:
    argv = _probe("", code=1, stderr="  Traceback\n" + "x" * 500 + "ImportError: no torch\n\n")
    with pytest.raises(RefusedError) as refused:
        probe_machine(argv)
    prefix = f"could not read the GPUs ({' '.join(argv[:3])} ...): "
    message = str(refused.value)
    assert message.startswith(prefix) and message.endswith("x" * 379 + "ImportError: no torch")
    assert len(message) == len(prefix) + 400


def test_a_machine_without_gpus_is_refused() -> None:
    with pytest.raises(RefusedError, match=r"^no GPU is visible to the engine's Python \(torch.cuda.device_count\(\) is 0\)$"):
        probe_machine(_probe(json.dumps({**MACHINE, "gpus": 0, "capability": None})))


def test_the_probe_reads_torch_and_the_optional_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "import types\n"
        "cuda = types.SimpleNamespace(device_count=lambda: 2, get_device_capability=lambda i: (9, 0), get_device_name=lambda i: 'H100',\n"
        "    get_device_properties=lambda i: types.SimpleNamespace(total_memory=85_045_870_592))\n"
        "version = types.SimpleNamespace(cuda='13.0')\n"
    )
    (tmp_path / "cutlass.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert probe_machine([sys.executable, "-c", PROBE]) == Machine(
        gpus=2, capability=(9, 0), cuda_runtime_major=13, modules=frozenset({"cutlass"}), gpu_name="H100", hbm_bytes=85_045_870_592
    )


@pytest.mark.parametrize(
    ("outputs", "prepared", "model"),
    [
        ({"serving": {"model": "org/rendered@abc123"}}, {"model": "org/prepared"}, "org/prepared"),
        ({"serving": {"model": "org/rendered@abc123"}}, {}, "org/rendered"),
        ({"serving": {"model": "org/rendered@a@b"}}, {"model": ""}, "org/rendered"),
        ({"serving": {"model": "org/plain"}}, {}, "org/plain"),
        ({"serving": None}, {}, SPEC.served_name),
        ({}, {}, SPEC.served_name),
    ],
)
def test_the_model_is_the_preparations_then_the_renders_then_the_served_name(
    outputs: dict[str, Any], prepared: dict[str, Any], model: str
) -> None:
    assert model_of(outputs, SPEC, prepared) == model


# -- reading the render -----------------------------------------------------------------------------


def test_a_container_run_takes_the_release_of_the_stacks_image(tmp_path: Path) -> None:
    preflight = Preflight(options(tmp_path, engine="docker"), print)
    assert preflight.result == {"stack": "dev", "notes": []} and preflight.clean_exit is None
    assert preflight.work == (tmp_path / "work").resolve()
    preflight.read()
    assert preflight.mode == "docker" and preflight.facts.release == "0.18.1"
    result = preflight.result
    assert result["engine"] == {
        "mode": "docker",
        "release": "0.18.1",
        "stack_release": "0.18.1",
        "python": sys.executable,
        "image": SPEC.image,
    }
    assert result["rendered"] == {
        "deployment": "vllm",
        "command": ["vllm", "serve", SPEC.model_path, *SPEC.flags],
        "env": SPEC.env,
        "grace_seconds": 25,
        "prestop_sleep_seconds": 5.0,
        "shutdown_timeout": 20.0,
        "probes": SPEC.probes,
        "gpus": 8,
    }
    names = result["flags"]["names"]
    assert names == sorted(set(names)) and "--max-model-len" in names and "--port" in names
    assert result["flags"]["unknown_to_release"] == []
    assert result["reads"] == preflight.reads and "vllm:num_requests_running" in result["reads"]
    assert preflight.outputs["vllmVersion"] == "0.18.1" and preflight.prepared["model"] == MODEL
    assert result["notes"] == []


def test_a_local_run_takes_the_installed_release_and_notes_the_stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    preflight = Preflight(options(tmp_path, engine="local"), print)
    preflight.read()
    assert preflight.result["engine"]["release"] == "0.26.0" and preflight.result["engine"]["stack_release"] == "0.18.1"
    assert preflight.facts.release == "0.26.0"
    assert preflight.result["notes"] == ["the stack pins vLLM 0.18.1; this preflight runs 0.26.0"]


def test_a_local_release_the_facts_do_not_cover_is_refused_naming_this_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _vllm(tmp_path / "site", "0.25.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(RefusedError, match=r"^vLLM 0\.25\.0 \(installed in " + sys.executable.replace(".", r"\.") + r"\) is not"):
        Preflight(options(tmp_path, engine="local"), print).read()


def _render_copy(tmp_path: Path, image_tag: str | None, outputs: bool, prepared: bool = True) -> Path:
    copy = tmp_path / "rendered"
    left_out = {name for name, kept in (("outputs.yaml", outputs), ("preflight.json", prepared)) if not kept}
    for path in RENDERED.rglob("*"):
        if path.is_file() and path.name not in left_out:
            target = copy / path.relative_to(RENDERED)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text()
            if image_tag is not None:
                text = text.replace(SPEC.image, SPEC.image.rsplit(":", 1)[0] + image_tag)
            target.write_text(text)
    return copy


def test_without_outputs_the_release_is_the_images(tmp_path: Path) -> None:
    preflight = Preflight(replace(options(tmp_path, engine="podman"), rendered=_render_copy(tmp_path, None, outputs=False)), print)
    preflight.read()
    assert preflight.outputs == {}
    assert preflight.result["engine"]["release"] == preflight.result["engine"]["stack_release"] == "0.18.1"


def test_an_image_without_a_release_tag_runs_the_release_the_stack_pins(tmp_path: Path) -> None:
    preflight = Preflight(replace(options(tmp_path, engine="docker"), rendered=_render_copy(tmp_path, "@sha256:" + "a" * 64, True)), print)
    preflight.read()
    assert preflight.result["engine"]["release"] == "0.18.1" and preflight.result["notes"] == []


def test_a_stack_that_names_no_release_pins_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    rendered = _render_copy(tmp_path, "@sha256:" + "a" * 64, outputs=False)
    runner = Preflight(replace(options(tmp_path, engine="local"), rendered=rendered), print)
    runner.read()
    assert runner.result["engine"]["stack_release"] == "" and runner.result["notes"] == []


def test_an_uncovered_image_is_refused_naming_the_image(tmp_path: Path) -> None:
    rendered = _render_copy(tmp_path, ":v0.19.0", outputs=False)
    with pytest.raises(RefusedError, match=r"^vLLM 0\.19\.0 \(the stack's image .*vllm-openai:v0\.19\.0\) is not covered"):
        Preflight(replace(options(tmp_path, engine="docker"), rendered=rendered), print).read()


def test_flags_the_release_does_not_take_are_listed(tmp_path: Path) -> None:
    rendered = _render_copy(tmp_path, None, outputs=True)
    for path in rendered.rglob("*.yaml"):
        path.write_text(path.read_text().replace("--max-model-len", "--max-model-length"))
    preflight = Preflight(replace(options(tmp_path, engine="docker"), rendered=rendered), print)
    preflight.read()
    assert preflight.result["flags"]["unknown_to_release"] == ["--max-model-length"]


# -- the machine and the command lines --------------------------------------------------------------


@pytest.mark.parametrize(("mode", "gpus"), [("docker", ["--gpus", "all"]), ("podman", ["--device", "nvidia.com/gpu=all"])])
def test_a_container_runs_the_stacks_image_with_every_gpu(tmp_path: Path, mode: str, gpus: list[str]) -> None:
    preflight = Preflight(options(tmp_path, engine=mode), print)
    preflight.read()
    assert preflight.container_base() == [mode, "run", "--rm", *gpus]
    assert preflight.python_argv("-c", "x") == [mode, "run", "--rm", *gpus, "--entrypoint", "python3", SPEC.image, "-c", "x"]


def test_the_local_python_is_this_interpreter(tools: Tools, tmp_path: Path) -> None:
    preflight = Preflight(options(tmp_path, engine="local"), print)
    preflight.mode = "local"
    assert preflight.python_argv("-c", "x") == [sys.executable, "-c", "x"]


def test_a_container_setup_probes_and_builds_the_miniature_in_the_image(tools: Tools, tmp_path: Path, notes: list[str]) -> None:
    preflight = ready(tmp_path, notes, "docker", port=18123)
    work = preflight.work
    base = ["run", "--rm", "--gpus", "all"]
    assert [(c["tool"], c["argv"]) for c in tools.calls()] == [
        ("docker", [*base, "--entrypoint", "python3", SPEC.image, "-c", PROBE]),
        (
            "docker",
            [
                *base,
                "-v",
                f"{run.PACKAGE_ROOT}:/preflight-src:ro",
                "-v",
                f"{work / 'model'}:/out",
                "-e",
                "PYTHONPATH=/preflight-src",
                "--entrypoint",
                "python3",
                SPEC.image,
                "-m",
                "preflight.miniature",
                "/out",
                "--model",
                MODEL,
                "--size",
                "miniature",
                "--tensor-parallel",
                "1",
            ],
        ),
    ]
    result = preflight.result
    assert result["machine"] == {
        "gpus": 8,
        "gpu": "NVIDIA B200",
        "capability": [10, 0],
        "cuda_runtime": 12,
        "modules": ["cutlass", "flashinfer_cubin"],
    }
    assert result["model"]["id"] == MODEL and result["model"]["miniature"] == {"weights": "written", "out": "/out"}
    source = find_source(MODEL, {})
    assert result["model"]["source"] == source.provenance and result["model"]["config"] == miniature_config(source.config)
    assert notes == [f"miniature of {MODEL} from the {result['model']['source']}"]
    assert (work / "model").is_dir()
    # The model's volume is the miniature's; the shared memory is the container's own.
    assert preflight.volume_dirs == {"/compile-cache": str(work / "volumes" / "compile-cache")}
    assert preflight.roots == {"compile cache": work / "volumes" / "compile-cache", "home": work / "home", "tmp": work / "tmp"}
    assert preflight.port == 18123 and preflight.url == "http://127.0.0.1:18123"
    assert preflight.run.port == 18123 and preflight.run.model == SPEC.model_path
    assert "HOME" not in preflight.run.env and "TMPDIR" not in preflight.run.env
    # The container mounts the volumes at the pod's paths: the pod's variables stand as rendered.
    assert preflight.run.env["VLLM_CACHE_ROOT"] == "/compile-cache"
    assert result["adaptations"] == [a.as_dict() for a in preflight.run.adaptations]
    assert "--port" in {a["what"] for a in result["adaptations"]}


def test_a_local_setup_runs_the_miniature_with_this_package_and_isolates_home_and_tmp(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("STAND_IN_MACHINE", json.dumps(HOPPER))
    preflight = ready(tmp_path, notes, "local")
    work = preflight.work
    probe, miniature = tools.calls()
    assert probe["argv"] == ["-c", PROBE] and probe["tool"] == "python"
    assert miniature["argv"] == [
        "-m",
        "preflight.miniature",
        str(work / "model"),
        "--model",
        MODEL,
        "--size",
        "miniature",
        "--tensor-parallel",
        "1",
    ]
    assert miniature["pythonpath"] == os.pathsep.join([str(run.PACKAGE_ROOT), "/elsewhere"])
    assert preflight.run.model == str(work / "model")
    assert preflight.run.env["HOME"] == str(work / "home") and preflight.run.env["TMPDIR"] == str(work / "tmp")
    assert preflight.run.env["VLLM_CACHE_ROOT"] == str(work / "volumes" / "compile-cache")
    assert preflight.port == free_port(SPEC.port)
    # vLLM would pick FlashInfer's prefill here without CuTe DSL: the release takes the flag that picks Triton's.
    assert "--gdn-prefill-backend=triton" in preflight.run.flags


def test_a_local_miniature_without_pythonpath_has_the_package_alone(tools: Tools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    preflight = Preflight(options(tmp_path, engine="local"), print)
    preflight.mode, preflight.model_dir = "local", tmp_path / "model"
    preflight.make_miniature(MODEL, 1)
    assert tools.calls()[0]["pythonpath"] == str(run.PACKAGE_ROOT)
    # A later run finds the folder there.
    assert preflight.make_miniature(MODEL, 1) == {"weights": "written", "out": str(tmp_path / "model")}


@pytest.mark.parametrize("outputs", [True, False])
def test_without_a_preparation_the_model_is_the_renders(tools: Tools, tmp_path: Path, notes: list[str], outputs: bool) -> None:
    rendered = _render_copy(tmp_path, None, outputs=outputs, prepared=False)
    runner = Preflight(replace(options(tmp_path, engine="docker"), rendered=rendered), notes.append)
    runner.read()
    assert runner.prepared == {}
    runner.setup()
    assert runner.result["model"]["id"] == MODEL == SPEC.served_name
    assert tools.calls()[-1]["argv"][-6:-4] == ["--model", MODEL]


def test_a_mount_path_written_with_a_trailing_slash_still_holds_the_model(tools: Tools, tmp_path: Path, notes: list[str]) -> None:
    rendered = _render_copy(tmp_path, None, outputs=True)
    for path in rendered.rglob("*.yaml"):
        path.write_text(path.read_text().replace("mountPath: /models\n", "mountPath: /models/\n"))
    runner = Preflight(replace(options(tmp_path, engine="docker"), rendered=rendered), notes.append)
    runner.read()
    assert "/models/" in {mount.path for mount in runner.spec.mounts}
    runner.setup()
    assert runner.volume_dirs == {"/compile-cache": str(runner.work / "volumes" / "compile-cache")}


def test_a_compile_cache_outside_every_volume_is_kept_in_the_home(tools: Tools, tmp_path: Path, notes: list[str]) -> None:
    rendered = _render_copy(tmp_path, None, outputs=True)
    for path in rendered.rglob("*.yaml"):
        path.write_text(path.read_text().replace("value: /compile-cache", "value: /compile-cacheX"))
    preflight = Preflight(replace(options(tmp_path, engine="docker"), rendered=rendered), notes.append)
    preflight.read()
    assert preflight.spec.env["VLLM_CACHE_ROOT"] == "/compile-cacheX"
    preflight.setup()
    assert preflight.roots["compile cache"] == preflight.work / "home" / ".cache" / "vllm"


def test_a_compile_cache_below_a_volume_is_kept_in_that_volume(tools: Tools, tmp_path: Path, notes: list[str]) -> None:
    rendered = _render_copy(tmp_path, None, outputs=True)
    for path in rendered.rglob("*.yaml"):
        path.write_text(path.read_text().replace("value: /compile-cache", "value: /compile-cache/vllm"))
    preflight = Preflight(replace(options(tmp_path, engine="docker"), rendered=rendered), notes.append)
    preflight.read()
    preflight.setup()
    assert preflight.roots["compile cache"] == preflight.work / "volumes" / "compile-cache"


def test_a_failed_probe_refuses_the_setup(tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAND_IN", "no-gpu-read")
    with pytest.raises(RefusedError, match=r"^could not read the GPUs \(docker run --rm \.\.\.\): x{400}$"):
        ready(tmp_path, notes, "docker")


def test_a_failed_miniature_stops_the_run_with_the_end_of_its_error(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN", "no-miniature")
    with pytest.raises(RuntimeError) as failed:
        ready(tmp_path, notes, "docker")
    assert str(failed.value) == "making the miniature failed: " + "E" * 1382 + "OSError: disk full" + "F" * 100


def test_a_local_engine_is_vllm_serve_through_this_python_with_the_runs_environment(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    preflight = ready(tmp_path, notes, "local")
    argv, env, stop = preflight.engine_argv(preflight.run, "1-cold", keep_home=True)
    assert argv == [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", preflight.run.model, *preflight.run.flags]
    assert env == {**os.environ, **preflight.run.env} and stop is None


@pytest.mark.parametrize("keep_home", [True, False])
def test_a_container_engine_is_named_for_the_stack_and_start_and_stopped_through_the_runtime(
    tools: Tools, tmp_path: Path, notes: list[str], keep_home: bool
) -> None:
    preflight = ready(tmp_path, notes, "podman")
    argv, env, stop = preflight.engine_argv(preflight.run, "2-all-caches", keep_home=keep_home)
    assert argv[:5] == ["podman", "run", "--rm", "--name", "preflight-dev-2-all-caches"]
    assert f"{preflight.work / 'model'}:{SPEC.model_path}:ro" in argv
    assert f"{preflight.work / 'volumes' / 'compile-cache'}:/compile-cache" in argv
    assert (f"{preflight.work / 'home'}:/root" in argv) is keep_home
    assert env == dict(os.environ) and stop == ["podman", "kill", "preflight-dev-2-all-caches"]


# -- one start --------------------------------------------------------------------------------------


def test_the_first_requests_ask_what_the_stack_serves_and_time_the_first_answer_from_ready(
    tools: Tools, tmp_path: Path, notes: list[str], api: str
) -> None:
    preflight = ready(tmp_path, notes, "docker")
    preflight.url = api
    record: dict[str, Any] = {"name": "1-cold"}
    started = time.monotonic()
    requests = preflight.first_requests(record)
    served = SPEC.served_name
    assert Api.bodies == [
        ("/v1/completions", {"model": served, "prompt": "The capital of France is", "max_tokens": 16, "temperature": 0}),
        (
            "/v1/chat/completions",
            {"model": served, "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16, "temperature": 0},
        ),
        (
            "/v1/chat/completions",
            {
                "model": served,
                "messages": [{"role": "user", "content": "Count to five."}],
                "max_tokens": 16,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ),
    ]
    assert [r["ending"] for r in requests.values()] == ["answered"] * 3 and list(requests) == ["completion", "chat", "chat_stream"]
    first = record["first_answer_after_ready_s"]
    assert 0 < first < time.monotonic() - started
    # Each time is from Ready, in milliseconds.
    assert requests["completion"]["end"] == round(first, 3)
    assert 0 <= requests["completion"]["start"] <= requests["completion"]["end"] <= requests["chat"]["start"]
    stream = requests["chat_stream"]
    assert stream["start"] <= stream["first_chunk"] <= stream["last_chunk"] <= stream["end"] < first + 5
    assert all(round(r["end"], 3) == r["end"] for r in requests.values())
    assert notes[-1] == f"1-cold start: first answer {first} s after Ready completion answered, chat answered, chat_stream answered"


def test_no_first_answer_when_the_completion_fails(tools: Tools, tmp_path: Path, notes: list[str], api: str) -> None:
    preflight = ready(tmp_path, notes, "docker")
    preflight.url = api
    Api.failing = {"/v1/completions"}
    record: dict[str, Any] = {"name": "2-all-caches"}
    requests = preflight.first_requests(record)
    assert record["first_answer_after_ready_s"] is None and requests["completion"]["ending"] == "http 500"
    assert notes[-1] == "2-all-caches start: first answer None s after Ready completion http 500, chat answered, chat_stream answered"


def test_the_first_requests_wait_as_long_as_allowed(tools: Tools, tmp_path: Path, notes: list[str]) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        preflight = ready(tmp_path, notes, "docker", first_answer_timeout=0.05)
        preflight.url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        requests = preflight.first_requests({"name": "1-cold"})
    assert {r["ending"] for r in requests.values()} == {"timed out"}


def test_a_start_whose_engine_exits_reports_its_last_errors_and_what_it_wrote(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch, quick_engine: None
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    preflight = ready(tmp_path, notes, "local")
    preflight.url = f"http://127.0.0.1:{_closed_port()}"
    (preflight.work / "home" / "old").mkdir(parents=True)
    monkeypatch.setenv("STAND_IN", "crash")
    record = preflight.start("1-cold", "cold", preflight.run, check_metrics=True, bench_name="stack", drain_after=True)
    assert record["name"] == "1-cold" and record["mode"] == "cold" and record["log"] == "1-cold.log"
    assert record["dropped"] == ["compile cache", "home", "tmp"] and record["ready_s"] is None
    assert record["error"] == "the engine exited rc=1; last errors: ValueError: first | an error in the middle | RuntimeError: last"
    assert notes[-2:] == ["1-cold: start, caches dropped: compile cache, home, tmp", f"1-cold: {record['error']}"]
    assert not (preflight.work / "home" / "old").exists()
    assert "metrics" not in record and "throughput" not in record and "drain" not in record
    assert set(record["scan"]) == {"figures", "markers", "first_seen_s"}
    assert record["caches"] == {name: {"before": {}, "written": {}} for name in ("compile cache", "home", "tmp")}
    assert "RuntimeError: last" in (preflight.work / "1-cold.log").read_text()
    assert isinstance(record["project_parser"], dict)


def test_a_start_without_health_within_the_timeout_says_so(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("STAND_IN_UP", str(tmp_path / "up"))
    _quick(monkeypatch, hold=tmp_path / "up")
    preflight = ready(tmp_path, notes, "local", ready_timeout=16.4)
    preflight.url = f"http://127.0.0.1:{_closed_port()}"
    record = preflight.start("1-cold", "all-caches", preflight.run, check_metrics=False, bench_name=None, drain_after=False)
    assert record["error"] == "the engine gave no /health 200 within 16 s; last errors: INFO: Application startup complete."
    assert record["dropped"] == []
    assert notes[-3:] == [
        "1-cold: start, caches dropped: none",
        "1-cold: waiting for /health: 15 s; last line: INFO: Application startup complete.",
        f"1-cold: {record['error']}",
    ]
    engine_call = next(c for c in tools.calls() if "serve" in c["argv"])
    assert engine_call["cwd"] == str(preflight.work)


def test_a_start_that_answers_is_measured_and_stopped_as_the_kubelet_would(
    tools: Tools, tmp_path: Path, notes: list[str], api: str, monkeypatch: pytest.MonkeyPatch, quick_engine: None
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    preflight = ready(tmp_path, notes, "local")
    preflight.url = api
    monkeypatch.setenv("STAND_IN_UP", str(tmp_path / "up"))
    Api.up_file = tmp_path / "up"
    record = preflight.start("1-cold", "compile-cache", preflight.run, check_metrics=True, bench_name="stack", drain_after=False)
    assert record["dropped"] == ["home", "tmp"] and "error" not in record
    assert record["throughput"] == {"error": "the client exited 0 and saved no result (see bench-stack.log)"}
    # The project's cold-start parser reads the start's own log, timed from the process's start.
    assert set(record["project_parser"]) == {"phases", "vllmSeconds", "compileCacheHit"}
    assert record["ready_s"] is not None and record["ready_s"] >= 0
    assert notes[1 - len(notes) :][0].startswith("1-cold: start, caches dropped: home, tmp")
    assert any(n.startswith(f"1-cold: /health 200 after {record['ready_s']:.1f} s; a completion and two chat") for n in notes)
    assert set(record["requests"]) == {"completion", "chat", "chat_stream"}
    assert (preflight.work / "1-cold-metrics.txt").read_bytes() == Api.metrics
    assert record["metrics"]["ok"] is True
    assert record["ttft_largest_bucket"] is not None and record["ttft_largest_bucket"] > 1
    took = record["sigterm_to_exit_idle_s"]
    assert took is not None and preflight.clean_exit == took
    assert record["caches"]["home"]["written"] == {".triton/cache": [1, 5]}
    # A later start that exits sooner leaves the slowest clean exit.
    preflight.clean_exit = took + 100
    (tmp_path / "up").unlink()
    preflight.start("2-all-caches", "all-caches", preflight.run, check_metrics=False, bench_name=None, drain_after=False)
    assert preflight.clean_exit == took + 100
    preflight.clean_exit = -1.0
    (tmp_path / "up").unlink()
    again = preflight.start("3-all-caches", "all-caches", preflight.run, check_metrics=False, bench_name=None, drain_after=False)
    assert preflight.clean_exit == again["sigterm_to_exit_idle_s"] and "metrics" not in again


def test_a_container_start_is_named_keeps_its_home_and_drains_through_the_runtime(
    tools: Tools, tmp_path: Path, notes: list[str], api: str, monkeypatch: pytest.MonkeyPatch, quick_engine: None
) -> None:
    drained: list[tuple[Any, ...]] = []

    def drain_run(*args: Any) -> dict[str, Any]:
        drained.append(args)
        return {"drained": True}

    monkeypatch.setattr(preflight.drain, "run", drain_run)
    monkeypatch.setenv("HOME", str(tmp_path / "container-home"))
    runner = ready(tmp_path, notes, "docker")
    runner.url = api
    monkeypatch.setenv("STAND_IN_UP", str(tmp_path / "up"))
    Api.up_file = tmp_path / "up"
    record = runner.start("2-all-caches", "all-caches", runner.run, check_metrics=False, bench_name=None, drain_after=True)
    assert record["drain"] == {"drained": True} and "sigterm_to_exit_idle_s" not in record
    assert isinstance(drained[0][0], Engine) and drained[0][0].stop_argv == ["docker", "kill", "preflight-dev-2-all-caches"]
    engine_call = next(c for c in tools.calls() if "serve" in c["argv"])
    assert engine_call["argv"][:4] == ["run", "--rm", "--name", "preflight-dev-2-all-caches"]
    assert f"{runner.work / 'home'}:/root" in engine_call["argv"]
    kills = [c["argv"] for c in tools.calls() if c["argv"][:1] == ["kill"]]
    assert kills == [["kill", "preflight-dev-2-all-caches", "--signal=SIGKILL"]]


def test_a_container_start_is_stopped_through_the_runtime(
    tools: Tools, tmp_path: Path, notes: list[str], api: str, monkeypatch: pytest.MonkeyPatch, quick_engine: None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "container-home"))
    preflight = ready(tmp_path, notes, "docker")
    preflight.url = api
    monkeypatch.setenv("STAND_IN_UP", str(tmp_path / "up"))
    Api.up_file = tmp_path / "up"
    record = preflight.start("1-cold", "cold", preflight.run, check_metrics=False, bench_name=None, drain_after=False)
    assert record["sigterm_to_exit_idle_s"] is not None
    engine_call = next(c for c in tools.calls() if "serve" in c["argv"])
    assert not any(arg.endswith(":/root") for arg in engine_call["argv"])
    kills = [c["argv"] for c in tools.calls() if c["argv"][:1] == ["kill"]]
    # SIGTERM and SIGKILL as the pod's deletion sends them, then SIGKILL again as the start ends.
    assert kills == [["kill", "preflight-dev-1-cold", f"--signal={name}"] for name in ("SIGTERM", "SIGKILL", "SIGKILL")]


class Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


def test_without_a_benchmark_client_the_throughput_says_how_to_get_one(tools: Tools, tmp_path: Path, notes: list[str]) -> None:
    preflight = ready(tmp_path, notes, "docker")
    preflight.prepared = {}
    assert preflight.throughput("stack", cast("Engine", Notes())) == {
        "error": "no benchmark client: run `python -m preflight <stack> --prepare` where the project is installed"
    }


@pytest.mark.parametrize("mode", ["local", "docker"])
def test_the_throughput_runs_the_stacks_client_against_the_miniature(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    preflight = ready(tmp_path, notes, mode, prompts=7, bench_timeout=30)
    engine = Notes()
    summary = preflight.throughput("no-mtp", cast("Engine", engine))
    assert summary == {"error": "the client exited 0 and saved no result (see bench-no-mtp.log)"}
    bench = tools.calls()[-1]
    # Beside a container the client is the `vllm` on the PATH; a local run's is this Python's.
    launcher = [sys.executable, "-m", "vllm.entrypoints.cli.main"] if mode == "local" else ["vllm"]
    tool, prefix = ("python", ["-m", "vllm.entrypoints.cli.main"]) if mode == "local" else ("vllm", [])
    words = bench["argv"]
    assert bench["tool"] == tool and words[: len(prefix) + 2] == [*prefix, "bench", "serve"]
    assert "--num-prompts=7" in words and f"--base-url={preflight.url}" in words
    assert f"--tokenizer={preflight.work / 'model'}" in words
    assert f"--result-dir={preflight.work / 'bench'}" in words and "--result-filename=no-mtp.json" in words
    assert (bench["home"] == str(preflight.work / "home")) is (mode == "local")
    # A local client runs in the engine's environment; beside a container, in this machine's own.
    assert bench["cache_root"] == (str(preflight.work / "volumes" / "compile-cache") if mode == "local" else None)
    assert (preflight.work / "bench").is_dir()
    assert preflight.result["bench"]["client"] == preflight.prepared["bench_client"]
    assert {a["what"] for a in preflight.result["bench"]["adaptations"]} >= {"bench --num-prompts", "bench --tokenizer"}
    assert engine.lines == ["throughput run (no-mtp)"]
    assert notes[-2:] == [
        "throughput (no-mtp): 7 prompts through the stack's benchmark client",
        "throughput (no-mtp): " + report.bench_line(summary),
    ]
    assert (preflight.work / "bench-no-mtp.log").read_text().startswith(" ".join([*launcher, "bench", "serve"]))
    # The stack's run and each comparison share the results' folder.
    assert preflight.throughput("stack", cast("Engine", engine))["error"].endswith("(see bench-stack.log)")


def test_a_client_past_its_time_is_stopped(tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    preflight = ready(tmp_path, notes, "docker", bench_timeout=0.1)
    monkeypatch.setenv("STAND_IN", "slow-bench")
    assert preflight.throughput("stack", cast("Engine", Notes())) == {"error": "the client ran past 0 s"}


def test_the_drain_follows_the_pods_grace_and_the_engines_longest_request(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, ...]] = []

    def drained(*args: Any) -> dict[str, Any]:
        calls.append(args)
        return {"drained": True}

    monkeypatch.setattr(preflight.drain, "run", drained)
    ready_one = ready(tmp_path, notes, "docker", drain_requests=5, observe_after_grace=7.0)
    engine = cast("Engine", Notes())
    assert ready_one.drain(engine) == {"drained": True}
    (got_engine, url, host, port, served, plan, progress) = calls[0]
    assert (got_engine, url, host, port, served) == (engine, ready_one.url, "127.0.0.1", ready_one.port, SPEC.served_name)
    assert progress == ready_one.progress
    max_len = int(ready_one.run.flag("--max-model-len") or 0)
    assert plan == preflight.drain.DrainPlan(
        grace_seconds=25, prestop_seconds=5.0, shutdown_timeout=20.0, streamed=5, plain=5, max_tokens=max_len - 64, observe_after_grace=7.0
    )


@pytest.mark.parametrize(("max_len", "tokens"), [(None, 2048 - 64), ("70", 16), ("81", 17)])
def test_the_drains_requests_fill_the_context_less_the_prompt(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch, max_len: str | None, tokens: int
) -> None:
    plans: list[preflight.drain.DrainPlan] = []

    def drained(*args: Any) -> dict[str, Any]:
        plans.append(args[5])
        return {}

    monkeypatch.setattr(preflight.drain, "run", drained)
    ready_one = ready(tmp_path, notes, "docker")
    flags = tuple(f for f in ready_one.run.flags if not f.startswith("--max-model-len"))
    ready_one.run = replace(ready_one.run, flags=(*flags, f"--max-model-len={max_len}") if max_len else flags)
    ready_one.spec = replace(ready_one.spec, flags=tuple(f for f in ready_one.spec.flags if not f.startswith("--shutdown-timeout")))
    ready_one.drain(cast("Engine", Notes()))
    assert plans[0].max_tokens == tokens and plans[0].shutdown_timeout == 0.0


# -- the whole run ----------------------------------------------------------------------------------


class Scripted(Preflight):
    """A preflight whose render, machine and starts are given: what ``execute`` asks of each start is recorded."""

    def __init__(self, options: Options, answers: list[dict[str, Any]]) -> None:
        super().__init__(options, lambda text: None)
        self.answers = answers
        self.asked: list[dict[str, Any]] = []

    def read(self) -> None:
        self.result["read"] = True

    def setup(self) -> None:
        self.run = EngineRun(model="/m", flags=("--a", "--speculative-config={}", "--b"), env={}, port=1, adaptations=())

    def start(self, label: str, mode: str, run: Any, *, check_metrics: bool, bench_name: str | None, drain_after: bool) -> dict[str, Any]:
        self.asked.append(
            {"label": label, "mode": mode, "metrics": check_metrics, "bench": bench_name, "drain": drain_after, "flags": run.flags}
        )
        answer = self.answers.pop(0) if self.answers else {"ready_s": 1.0}
        return {"name": label, **answer}


def test_each_start_in_order_checks_metrics_first_and_last_and_the_last_benchmarks_and_drains(tmp_path: Path) -> None:
    runner = Scripted(options(tmp_path, starts=("cold", "compile-cache", "all-caches"), first_answer_budget=12.5), [])
    runner.clean_exit = 3.0
    result = runner.execute()
    assert (tmp_path / "work").is_dir() and result["read"] is True
    assert [(a["label"], a["mode"], a["metrics"], a["bench"], a["drain"]) for a in runner.asked] == [
        ("1-cold", "cold", True, None, False),
        ("2-compile-cache", "compile-cache", False, None, False),
        ("3-all-caches", "all-caches", True, "stack", True),
    ]
    assert result["budgets"] == {"first_answer_after_ready_s": 12.5}
    assert [s["name"] for s in result["starts"]] == ["1-cold", "2-compile-cache", "3-all-caches"]
    assert result["clean_exit_s"] == 3.0
    assert result["caches"] == {}
    assert result["cache_dirs"] == [c.__dict__ for c in caches.CACHE_DIRS]
    assert "comparisons" not in result


def test_a_single_start_does_everything_and_no_prompts_or_drain_skip_those(tmp_path: Path) -> None:
    runner = Scripted(options(tmp_path, starts=("cold",), prompts=0, drain=False), [])
    runner.execute()
    assert [(a["metrics"], a["bench"], a["drain"]) for a in runner.asked] == [(True, None, False)]
    runner = Scripted(options(tmp_path, starts=("cold",)), [])
    runner.execute()
    assert [(a["metrics"], a["bench"], a["drain"]) for a in runner.asked] == [(True, "stack", True)]


def test_the_starts_stop_at_the_first_that_is_not_ready_and_no_comparison_runs(tmp_path: Path) -> None:
    runner = Scripted(options(tmp_path, compare=("no-mtp",)), [{"ready_s": None, "error": "exited"}])
    result = runner.execute()
    assert [a["label"] for a in runner.asked] == ["1-cold"] and len(result["starts"]) == 1
    assert "comparisons" not in result


def test_the_cache_summary_is_of_the_starts_run(tmp_path: Path) -> None:
    written = {"home": {"written": {".triton/cache": [3, 30]}}}
    runner = Scripted(options(tmp_path), [{"ready_s": 1.0, "caches": written}, {"ready_s": 1.0, "caches": {}}])
    result = runner.execute()
    assert result["caches"] == {
        "home:.triton/cache": {"root": "home", "folder": ".triton/cache", "cold_files": 3, "cold_bytes": 30, "2-all-caches": "reused"}
    }


def test_comparisons_run_after_the_starts_each_keeping_every_cache(tmp_path: Path) -> None:
    runner = Scripted(options(tmp_path, compare=("no-mtp",)), [])
    result = runner.execute()
    assert runner.asked[-1] == {
        "label": "compare-no-mtp",
        "mode": "all-caches",
        "metrics": False,
        "bench": "no-mtp",
        "drain": False,
        "flags": ("--a", "--b"),
    }
    assert result["comparisons"] == {
        "no-mtp": {
            "what": "the stack's flags without --speculative-config",
            "flags": ["--a", "--b"],
            "start": {"name": "compare-no-mtp", "ready_s": 1.0},
        }
    }


def test_an_unknown_comparison_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    runner = Scripted(options(tmp_path), [])
    with pytest.raises(RefusedError) as refused:
        runner.compare("fp8")
    assert str(refused.value) == f"unknown comparison 'fp8'; one of {', '.join(COMPARISONS)}"


@pytest.mark.parametrize("mode", ["local", "docker"])
def test_the_defaults_comparison_runs_vllms_defaults_adapted_to_this_machine(
    tools: Tools, tmp_path: Path, notes: list[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("STAND_IN_MACHINE", json.dumps(HOPPER))
    preflight = ready(tmp_path, notes, mode)
    asked: list[tuple[str, str, Any, dict[str, Any]]] = []

    def start(label: str, mode: str, run: Any, **flags: Any) -> dict[str, Any]:
        asked.append((label, mode, run, flags))
        return {"name": label}

    monkeypatch.setattr(preflight, "start", start)
    compared = preflight.compare("defaults")
    label, start_mode, run_given, flags = asked[0]
    assert (label, start_mode, flags) == (
        "compare-defaults",
        "all-caches",
        {"check_metrics": False, "bench_name": "defaults", "drain_after": False},
    )
    assert compared == {
        "what": "vLLM's defaults: the served name, the port and what this machine forces",
        "flags": list(run_given.flags),
        "start": {"name": "compare-defaults"},
    }
    assert f"--served-model-name={SPEC.served_name}" in run_given.flags
    assert f"--port={preflight.port}" in run_given.flags and "--max-model-len" not in " ".join(run_given.flags)
    assert run_given.model == preflight.run.model and run_given.port == preflight.port
    assert "--speculative-config" not in " ".join(run_given.flags)
    assert "--gdn-prefill-backend=triton" in run_given.flags
    if mode == "local":
        assert run_given.env["HOME"] == str(preflight.work / "home") and run_given.env["TMPDIR"] == str(preflight.work / "tmp")
        assert run_given.env["VLLM_CACHE_ROOT"] == str(preflight.work / "volumes" / "compile-cache")
    else:
        assert "HOME" not in run_given.env and run_given.env["VLLM_CACHE_ROOT"] == "/compile-cache"


def test_a_refused_run_still_writes_its_report(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run.execute(options(tmp_path, engine="auto"))
    assert result["refused"].startswith("no vLLM is installed in this Python")
    assert result["verdict"] == report.verdict(result)
    written = json.loads((tmp_path / "work" / "report.json").read_text())
    assert written == json.loads(json.dumps(result, default=str))
    assert (tmp_path / "work" / "report.txt").read_text() == report.text(result)
    assert (tmp_path / "work" / "report.json").read_text() == json.dumps(result, indent=1, default=str)
    assert capsys.readouterr().err == ""


def test_a_run_makes_its_work_folder_however_deep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    deep = replace(options(tmp_path), work=tmp_path / "a" / "b" / "work")
    run.execute(deep)
    assert (deep.work / "report.json").is_file()
    runner = Scripted(replace(options(tmp_path), work=tmp_path / "c" / "d" / "work"), [])
    runner.execute()
    assert runner.work.is_dir()


def test_values_json_has_no_type_for_are_written_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "Preflight", lambda options, progress: _Speaking(options, progress))
    result = run.execute(options(tmp_path), lambda text: None)
    assert json.loads((tmp_path / "work" / "report.json").read_text())["work"] == str(result["work"])


def test_a_run_reports_through_the_progress_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr(run, "Preflight", lambda options, progress: _Speaking(options, progress))
    result = run.execute(options(tmp_path), lines.append)
    assert lines == ["spoke"] and result["stack"] == "dev" and "refused" not in result
    assert json.loads((tmp_path / "work" / "report.json").read_text())["verdict"] == result["verdict"]


class _Speaking(Preflight):
    def execute(self) -> dict[str, Any]:
        self.progress("spoke")
        self.result["work"] = self.work
        return self.result


def test_without_a_progress_the_run_prints_its_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(run, "Preflight", lambda options, progress: _Speaking(options, progress))
    run.execute(options(tmp_path))
    assert capsys.readouterr().err == "[preflight +     0s] spoke\n"


def test_a_render_whose_shape_overfills_its_node_fails_naming_the_setting_before_any_tool_runs(tools: Tools, tmp_path: Path) -> None:
    # The extraArgs workaround: the render keeps data parallel 8 and adds tensor parallel 8.
    rendered = tmp_path / "rendered"
    shutil.copytree(RENDERED, rendered)
    deployment = rendered / "kubernetes" / "llm-serving.deployment.vllm.yaml"
    text = deployment.read_text(encoding="utf-8")
    assert "--data-parallel-size=8" in text
    widened = text.replace("--data-parallel-size=8", "--data-parallel-size=8\n        - --tensor-parallel-size=8")
    deployment.write_text(widened, encoding="utf-8")
    result = run.execute(replace(options(tmp_path, engine="docker"), rendered=rendered), lambda text: None)
    assert result["shape"]["setting"] == "llm:serving.dataParallelSize"
    assert "= 64 GPUs, on a node of 8" in result["shape"]["error"]
    assert [f["what"] for f in result["verdict"]["failures"]] == ["shape (llm:serving.dataParallelSize)"]
    assert tools.calls() == []


def test_a_full_size_run_builds_the_real_config_loads_dummy_weights_and_holds_each_engines_memory_to_the_plan(
    tools: Tools, tmp_path: Path, notes: list[str], api: str, monkeypatch: pytest.MonkeyPatch, quick_engine: None
) -> None:
    _vllm(tmp_path / "site", "0.26.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("STAND_IN_MACHINE", json.dumps({**HOPPER, "name": "NVIDIA H200", "memory": 143_771 * 2**20}))
    preflight = ready(tmp_path, notes, "local", size="full")
    work = preflight.work
    assert tools.calls()[1]["argv"] == [
        "-m",
        "preflight.miniature",
        str(work / "model-full"),
        "--model",
        MODEL,
        "--size",
        "full",
        "--tensor-parallel",
        "1",
    ]
    assert "--load-format=dummy" in preflight.run.flags and preflight.run.model == str(work / "model-full")
    model = preflight.result["model"]
    assert (model["size"], model["kind"]) == ("full", "hybrid")
    assert model["config"]["text_config"]["hidden_size"] == 5120 and model["config"]["quantization_config"]["quant_method"] == "fp8"
    preflight.url = api
    monkeypatch.setenv("STAND_IN_UP", str(tmp_path / "up"))
    Api.up_file = tmp_path / "up"
    record = preflight.start("1-cold", "cold", preflight.run, check_metrics=False, bench_name=None, drain_after=False)
    assert record["memory"]["EngineCore_DP0 pid=8"]["kv_tokens"] == 185_949
    assert record["phases_full_size"]["steps"]["loading"] >= 0
    # dev's flags on one H200 (MTP, 8192 sequences): the plan of the command line run here, the GPU's memory probed.
    assert record["memory_plan"]["kv_tokens"] == pytest.approx(185_949, rel=0.10)
    assert {c["term"]: c["ok"] for c in record["memory_checks"]} == {"weights_gib": True, "kv_cache_gib": True, "kv_tokens": True}
    shown = report.text({"starts": [record]})
    assert "memory of EngineCore_DP0 pid=8: weights_gib 28.99" in shown and "memory plan: 3 of 3 printed terms within 10%" in shown
    # The defaults leave the sequences and batch to vLLM: no plan, said so.
    bare = replace(preflight.run, flags=("--port=8000", "--load-format=dummy"))
    (tmp_path / "up").unlink()
    defaults = preflight.start("compare-defaults", "all-caches", bare, check_metrics=False, bench_name=None, drain_after=False)
    assert defaults["memory_plan"] == {
        "none": "not held to a plan: the command line leaves --max-model-len, --max-num-seqs, "
        "--max-num-batched-tokens to vLLM's choice on the GPU"
    }
    assert "memory_checks" not in defaults
    assert "    memory: not held to a plan: the command line leaves" in report.text({"starts": [defaults]})
