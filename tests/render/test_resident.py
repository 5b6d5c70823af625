"""The resident renderer: a render it runs is the render this process would run, and it fails safe.

A real resident process is started on a private runtime folder, as the render starts it, and real
``python -m render`` processes talk to it over its socket; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pulumi_gcp
import pulumi_kubernetes.core.v1
import pytest

from render import resident
from render.changes import write_records
from render.engine import PROJECT_ROOT
from render.files import plan, write
from render.lifecycle import LIFECYCLE_FILE
from tests.conftest import rendered

WAIT_SECONDS = 120


def environment(runtime: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "RENDER_RESIDENT": "1", **extra}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=WAIT_SECONDS)


def log_of(runtime: Path) -> str:
    return "".join(path.read_text() for path in runtime.glob("vllm-gke-render-*/*.log"))


def wait_for(condition: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        assert time.monotonic() < deadline, f"not within {WAIT_SECONDS} s: {condition}"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A resident process serving this checkout, started as a render starts it, preloading this process's SDKs."""
    # Short: a Unix socket's path holds at most 107 bytes.
    folder = tmp_path_factory.mktemp("rt")
    # As `python -m render` does: a render in this process, then the resident preloads what it imported.
    write(rendered("dev"), folder / "here")
    write_records(rendered("dev"), folder / "here")
    env = environment(folder)
    private = folder / f"vllm-gke-render-{os.getuid()}"
    private.mkdir(mode=0o700)
    with (private / "fixture.log").open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "render.resident", "serve"], cwd=PROJECT_ROOT, env=env, stdin=subprocess.PIPE, stderr=log, text=True
        )
    assert server.stdin is not None
    with server.stdin:
        server.stdin.write("\n".join(resident.third_party_modules(sys.modules)))
    try:
        wait_for("the resident process serves", lambda: " serving " in log_of(folder))
        yield folder
    finally:
        run(env, "-m", "render.resident", "stop")
        server.wait(timeout=WAIT_SECONDS)
    assert "stopped: asked to stop" in log_of(folder)
    assert not list(private.glob("*.sock"))


def test_a_render_the_resident_process_runs_equals_one_in_this_process(runtime: Path, tmp_path: Path) -> None:
    forwarded = run(environment(runtime), "-m", "render", "dev", "--out", str(tmp_path / "resident"))
    assert forwarded.returncode == 0, forwarded.stderr
    # The resident process ran it (its log names each render), in a child that read the project afresh.
    assert f"dev --out {tmp_path / 'resident'}" in log_of(runtime)
    here = {path.relative_to(runtime / "here"): path.read_bytes() for path in (runtime / "here").rglob("*") if path.is_file()}
    there = {path.relative_to(tmp_path / "resident"): path.read_bytes() for path in (tmp_path / "resident").rglob("*") if path.is_file()}
    # The same files as this process's render of the stack, and the checks' own record beside them.
    assert {path: there.get(path) for path in here} == here
    assert set(there) - set(here) == {Path(LIFECYCLE_FILE)}
    assert forwarded.stdout.startswith(plan(rendered("dev")))
    assert forwarded.stdout.endswith(f"written to {tmp_path / 'resident'}\n")


def test_a_render_error_reaches_the_caller_with_its_exit_code(runtime: Path) -> None:
    failed = run(environment(runtime), "-m", "render", "nosuch")
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: no stack 'nosuch'"), failed.stderr
    assert failed.stdout == ""
    helped = run(environment(runtime), "-m", "render", "--help")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("usage: python -m render")
    assert ": nosuch\n" in log_of(runtime)
    assert ": --help\n" in log_of(runtime)


# `python -m render` as a terminal starts it. A suite started in the background (nohup, `&` in a script)
# hands its processes SIGINT ignored, and Python then raises no KeyboardInterrupt, as for any background job.
AS_FROM_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'render', *sys.argv[1:]])"
)


def test_ctrl_c_reaches_the_render_the_resident_process_runs(runtime: Path, tmp_path: Path) -> None:
    client = subprocess.Popen(
        [sys.executable, "-c", AS_FROM_A_TERMINAL, "dev", "--out", str(tmp_path / "stopped")],
        cwd=PROJECT_ROOT,
        env=environment(runtime),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for("the render started in the resident process", lambda: f"--out {tmp_path / 'stopped'}" in log_of(runtime))
    client.send_signal(signal.SIGINT)
    _, shown = client.communicate(timeout=WAIT_SECONDS)
    assert client.returncode == 128 + signal.SIGINT, shown
    assert f"ended with status {130 << 8}" in log_of(runtime)


@pytest.mark.parametrize(
    ("variables", "on"),
    [
        ({}, True),
        ({"CI": "true"}, False),
        ({"CI": "true", "RENDER_RESIDENT": "1"}, True),
        ({"RENDER_RESIDENT": "0"}, False),
        ({"CI": ""}, True),
    ],
)
def test_the_resident_renderer_is_on_by_default_off_in_ci_and_on_request(variables: dict[str, str], on: bool) -> None:
    assert resident.enabled(variables) is on


@pytest.fixture
def short_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runtime folder whose sockets' paths fit in the 107 bytes a Unix socket's path may hold."""
    return tmp_path_factory.mktemp("s")


def test_a_socket_nobody_serves_leaves_the_render_to_this_process(short_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_path))
    monkeypatch.setenv("RENDER_RESIDENT", "1")
    folder = resident.home()
    assert folder is not None
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(resident.address(folder)))
    stale.close()  # a resident process killed before it removed its socket
    assert resident.forward(["dev"]) is None


def test_a_runtime_folder_others_can_enter_is_not_used(short_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_path))
    (short_path / f"vllm-gke-render-{os.getuid()}").mkdir(mode=0o755)
    assert resident.home() is None


def test_a_runtime_folder_too_deep_for_a_socket_is_not_used(short_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RENDER_RESIDENT", "1")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_path / ("d" * 80)))
    assert resident.home() is None
    assert resident.forward(["dev"]) is None


def test_a_change_the_sdks_see_at_import_gives_another_resident_process(monkeypatch: pytest.MonkeyPatch) -> None:
    before = resident.key()
    monkeypatch.setenv("PULUMI_ACCESS_TOKEN", "changed")
    assert resident.key() != before
    monkeypatch.delenv("PULUMI_ACCESS_TOKEN")
    monkeypatch.setenv("COLUMNS", "80")  # read by no SDK at import
    assert resident.key() == before


def test_the_resident_process_preloads_only_installed_code_already_run() -> None:
    # Touching a lazily imported subpackage loads it, as the program's resources do.
    assert "Network" in vars(pulumi_gcp.compute)
    assert "Pod" in vars(pulumi_kubernetes.core.v1)
    preloaded = resident.third_party_modules(sys.modules)
    assert {"pulumi", "pulumi_gcp.compute", "pulumi_kubernetes.core.v1", "json"} <= set(preloaded)
    # The project's code is read afresh by each render; a subpackage pulumi_gcp loads lazily and nobody used is not run.
    assert not [name for name in preloaded if name.split(".")[0] in {"render", "stacks", "components", "tests"}]
    assert "pulumi_gcp.alloydb" in sys.modules
    assert "pulumi_gcp.alloydb" not in preloaded
    assert not [name for name in preloaded if name.split(".")[0] in resident.UNFORKABLE]


def test_a_preload_that_starts_a_thread_stops_the_resident_process(short_path: Path) -> None:
    module = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    (short_path / "starts_a_thread.py").write_text(module)
    serve = [sys.executable, "-m", "render.resident", "serve"]
    env = environment(short_path, PYTHONPATH=str(short_path))
    served = subprocess.run(serve, cwd=PROJECT_ROOT, env=env, input="starts_a_thread", capture_output=True, text=True, timeout=WAIT_SECONDS)
    assert "stopped: 1 threads started while preloading" in served.stderr
    assert not list(short_path.glob("vllm-gke-render-*/*.sock"))


def test_an_idle_resident_process_stops_and_removes_its_socket(short_path: Path) -> None:
    code = "from render import resident; print(resident.serve(resident.home(), [], idle_seconds=0.2))"
    served = run(environment(short_path), "-c", code)
    assert served.stdout == "idle for 0.2 s\n", served.stderr
    assert not list(short_path.glob("vllm-gke-render-*/*.sock"))


def test_the_resident_process_runs_no_project_module_outside_its_own_files() -> None:
    # What `python -m render.resident serve` imports of the project before it preloads anything.
    code = "import json, sys, render.resident; print(json.dumps([m.__file__ for n, m in sys.modules.items() if n.startswith('render')]))"
    loaded = run({**os.environ}, "-c", code)
    assert loaded.returncode == 0, loaded.stderr
    files = {Path(name).name for name in json.loads(loaded.stdout)}
    assert files == set(resident.OWN_FILES)


def test_the_preload_runs_a_lazily_imported_subpackage_before_its_modules() -> None:
    # pulumi_gcp creates its subpackages as lazy modules; one the render used comes before its own modules in the list.
    code = (
        "import sys, types; from render import resident; "
        "resident.preload(['pulumi_gcp', 'pulumi_gcp.monitoring']); "
        "print(type(sys.modules['pulumi_gcp.monitoring']) is types.ModuleType, 'pulumi_gcp.monitoring.alert_policy' in sys.modules)"
    )
    preloaded = run({**os.environ}, "-c", code)
    assert preloaded.stdout == "True True\n", preloaded.stderr
