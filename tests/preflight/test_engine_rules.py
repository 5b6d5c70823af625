"""One engine process as the preflight runs it: small Python programs stand in for vLLM, a local server for its /health.

The waits run on a clock of their own (one step per sleep), so the 15-second progress notes and the half-second
polls are checked to the step without waiting them out.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import preflight.engine as engine_module
from preflight.engine import Engine
from preflight.logscan import stamp
from tests.http_stand_in import serving

STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z (.*)$")
# Says it is ready (its SIGTERM handler set), then waits; on SIGTERM it says which signal came and exits 0.
PATIENT = (
    "import signal, sys, time\n"
    "def stop(number, frame):\n"
    "    print('got', number, flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, stop)\n"
    "signal.signal(signal.SIGINT, stop)\n"
    "print('ready', flush=True)\n"
    "time.sleep(30)\n"
)
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(30)\n"


def python(code: str, *args: str) -> list[str]:
    """A command line running ``code``, on one line as the log's start line is."""
    return [sys.executable, "-c", f"exec({code!r})", *args]


def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.005)


class Clock:
    """``time`` for the engine module: monotonic reads this clock, sleep moves it (and yields a little for real)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        time.sleep(0.001)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(engine_module, "time", SimpleNamespace(monotonic=fake.monotonic, sleep=fake.sleep))
    return fake


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Callable[..., Engine]]:
    engines: list[Engine] = []

    def start(argv: list[str], env: dict[str, str] | None = None, stop_argv: list[str] | None = None) -> Engine:
        engine = Engine(argv, env if env is not None else dict(os.environ), tmp_path / "engine.log", cwd=tmp_path, stop_argv=stop_argv)
        engines.append(engine)
        return engine

    yield start
    for engine in engines:
        # A test that closed its engine has nothing left to close.
        with contextlib.suppress(ValueError):
            engine.close()


def logged(engine: Engine) -> list[str]:
    """The log's lines without their stamps (each must have one)."""
    lines = engine.log_path.read_text(encoding="utf-8").splitlines()
    found = [STAMPED.match(line) for line in lines]
    assert all(found), lines
    return [match.group(1) for match in found if match]


class Health(BaseHTTPRequestHandler):
    """/health: 503 for the first ``busy`` requests, then 200."""

    busy = 0
    seen = 0

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        Health.seen += 1
        status = 200 if self.path == "/health" and Health.seen > Health.busy else 503
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def health() -> Iterator[Callable[[int], str]]:
    with serving(Health) as url:

        def serve(busy: int) -> str:
            Health.busy, Health.seen = busy, 0
            return url

        yield serve


# -- output and exit --------------------------------------------------------------------------------


def test_each_output_line_is_stamped_after_the_start_line_and_the_exit_is_noted(started: Callable[..., Engine], tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "print('on stdout', os.environ['PREFLIGHT_MARK'], flush=True)\n"
        "print('on stderr', file=sys.stderr, flush=True)\n"
        "print('cwd', os.getcwd(), flush=True)\n"
        "print('stdin', repr(sys.stdin.read()), flush=True)\n"
        "print('own session', os.getsid(0) == os.getpid(), flush=True)\n"
        "sys.stdout.buffer.write(b'caf\\xe9\\n')\n"
        "print('trailing  ', flush=True)\n"
        "print('ends in X', flush=True)\n"
        "sys.exit(3)\n"
    )
    engine = started(python(code, "one two"), env={**os.environ, "PREFLIGHT_MARK": "marked"})
    assert engine.wait_exit(10) is not None
    until(lambda: "process exited" in engine.log_path.read_text())
    lines = logged(engine)
    assert lines[0] == f"[preflight] start: {sys.executable} -c exec({code!r}) one two"
    assert lines[1:-1] == [
        "on stdout marked",
        "on stderr",
        f"cwd {tmp_path}",
        "stdin ''",
        "own session True",
        "caf\ufffd",
        "trailing  ",
        "ends in X",
    ]
    exited = re.fullmatch(r"\[preflight\] process exited rc=3 after (\d+\.\d\d) s", lines[-1])
    assert exited and float(exited.group(1)) < 30
    assert engine.log_path.read_text().startswith(stamp(engine.started_at) + " [preflight] start: ")
    assert engine.returncode == 3 and not engine.running and engine.exit_time is not None
    assert engine.tail == lines[1:-1]
    assert engine.last_line() == "ends in X"


def test_the_engine_reads_nothing_of_the_preflights_own_input(started: Callable[..., Engine]) -> None:
    read, write = os.pipe()
    os.write(write, b"typed at the terminal")
    os.close(write)
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        engine = started(python("import sys; print('stdin', repr(sys.stdin.read()), flush=True)"))
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)
    engine.wait_exit(10)
    until(lambda: bool(engine.tail))
    assert engine.tail == ["stdin ''"]


def test_a_running_engine_has_no_return_code(started: Callable[..., Engine]) -> None:
    engine = started(python("import time; time.sleep(30)"))
    assert engine.running and engine.returncode is None and engine.exit_time is None


def test_the_engines_threads_do_not_hold_the_preflight_open(started: Callable[..., Engine]) -> None:
    # The reader and the waiter are daemons: the preflight's Python exits even while an engine it started runs.
    before = set(threading.enumerate())
    started(python("import time; time.sleep(30)"))
    new = [thread for thread in threading.enumerate() if thread not in before]
    assert len(new) == 2 and all(thread.daemon for thread in new)


def test_the_start_is_stamped_in_utc(started: Callable[..., Engine]) -> None:
    before = datetime.now(UTC)
    engine = started(python("pass"))
    assert engine.started_at.tzinfo is UTC
    assert before <= engine.started_at <= datetime.now(UTC) + timedelta(seconds=1)
    assert engine.argv == [sys.executable, "-c", "exec('pass')"] and engine.stop_argv is None


@pytest.mark.parametrize(("lines", "kept"), [(400, 400), (401, 301), (450, 350)])
def test_the_tail_keeps_the_last_lines_dropping_a_hundred_past_400(started: Callable[..., Engine], lines: int, kept: int) -> None:
    engine = started(python(f"for i in range({lines}): print('line', i)"))
    engine.wait_exit(10)
    until(lambda: "process exited" in engine.log_path.read_text())
    assert len(engine.tail) == kept
    assert engine.tail[0] == f"line {lines - kept}" and engine.tail[-1] == f"line {lines - 1}"


def test_the_last_line_is_cut_to_its_last_160_characters(started: Callable[..., Engine]) -> None:
    engine = started(python("print('a' * 40 + 'b' * 160)"))
    engine.wait_exit(10)
    until(lambda: bool(engine.tail))
    assert engine.last_line() == "b" * 160


def test_before_any_output_there_is_no_last_line(started: Callable[..., Engine]) -> None:
    engine = started(python("import time; time.sleep(30)"))
    assert engine.last_line() == ""


def test_a_note_after_the_engine_is_closed_is_dropped(started: Callable[..., Engine]) -> None:
    engine = started(python("pass"))
    engine.close()
    text = engine.log_path.read_text()
    engine.note("late")
    assert engine.log_path.read_text() == text and "late" not in text


def test_a_note_is_written_at_once(started: Callable[..., Engine]) -> None:
    engine = started(python(PATIENT))
    engine.note("throughput run (stack)")
    assert "[preflight] throughput run (stack)" in logged(engine)


# -- waiting for /health ----------------------------------------------------------------------------


def test_ready_is_the_first_health_200_polled_every_half_second_with_a_note_each_15_s(
    started: Callable[..., Engine], health: Callable[[int], str], clock: Clock
) -> None:
    url = health(35)
    engine = started(python(PATIENT))
    until(lambda: engine.tail == ["ready"])
    notes: list[str] = []
    assert engine.wait_ready(url, 100.0, notes.append) == 17.5
    assert Health.seen == 36
    assert set(clock.sleeps) == {0.5}
    assert notes == ["waiting for /health: 15 s; last line: ready"]
    assert "[preflight] /health 200 after 17.50 s" in logged(engine)


def test_the_notes_keep_every_15_s(started: Callable[..., Engine], health: Callable[[int], str], clock: Clock) -> None:
    url = health(1000)
    engine = started(python(PATIENT))
    notes: list[str] = []
    assert engine.wait_ready(url, 40.0, notes.append) is None
    assert [note.split(";")[0] for note in notes] == ["waiting for /health: 15 s", "waiting for /health: 30 s"]


def test_no_health_200_within_the_timeout_is_none(started: Callable[..., Engine], health: Callable[[int], str], clock: Clock) -> None:
    url = health(1000)
    engine = started(python(PATIENT))
    assert engine.wait_ready(url, 3.0, lambda text: None) is None
    # Polled at 0, 0.5, ... 2.5 s: six looks, none at the timeout itself.
    assert Health.seen == 6
    assert engine.running


def test_a_process_that_ended_is_never_ready(started: Callable[..., Engine], health: Callable[[int], str]) -> None:
    url = health(0)
    engine = started(python("pass"))
    engine.wait_exit(10)
    assert engine.wait_ready(url, 100.0, lambda text: None) is None
    assert Health.seen == 0


# -- signals and stopping ---------------------------------------------------------------------------


def test_a_signal_goes_to_the_process_and_is_noted(started: Callable[..., Engine]) -> None:
    engine = started(python(PATIENT))
    until(lambda: engine.tail == ["ready"])
    engine.send_signal(signal.SIGINT)
    assert engine.wait_exit(10) is not None
    until(lambda: "process exited" in engine.log_path.read_text())
    assert engine.tail == ["ready", f"got {int(signal.SIGINT)}"]
    assert "[preflight] signal SIGINT" in logged(engine)


def test_the_default_signal_is_sigterm(started: Callable[..., Engine]) -> None:
    engine = started(python(PATIENT))
    until(lambda: engine.tail == ["ready"])
    engine.send_signal()
    engine.wait_exit(10)
    until(lambda: len(engine.tail) == 2)
    assert engine.tail[1] == f"got {int(signal.SIGTERM)}"


def test_a_signal_to_an_ended_process_is_only_noted(started: Callable[..., Engine]) -> None:
    engine = started(python("pass"))
    engine.wait_exit(10)
    engine.send_signal()
    assert "[preflight] signal SIGTERM" in logged(engine)


def _recorder(tmp_path: Path) -> tuple[list[str], Path]:
    calls = tmp_path / "calls.txt"
    # As `docker kill` of a container that is gone: it prints and fails.
    code = "import sys; open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]) + '\\n'); print('box'); sys.exit(1)"
    return python(code, str(calls), "kill", "box"), calls


def test_a_container_is_signalled_through_its_runtime(
    started: Callable[..., Engine], tmp_path: Path, clock: Clock, capfd: pytest.CaptureFixture[str]
) -> None:
    stop_argv, calls = _recorder(tmp_path)
    engine = started(python(PATIENT), stop_argv=stop_argv)
    assert engine.stop_argv == stop_argv and engine.stop_argv is not stop_argv
    until(lambda: engine.tail == ["ready"])
    engine.send_signal(signal.SIGTERM)
    assert calls.read_text() == "kill box --signal=SIGTERM\n"
    # The runtime signals the container; the client process itself is left alone.
    assert engine.wait_exit(0.2) is None and engine.tail == ["ready"]
    engine.kill()
    assert calls.read_text() == "kill box --signal=SIGTERM\nkill box --signal=SIGKILL\n"
    assert engine.returncode == -signal.SIGKILL
    assert capfd.readouterr().out == ""


def test_waiting_for_an_exit_counts_from_the_call(started: Callable[..., Engine], clock: Clock) -> None:
    engine = started(python(PATIENT))
    until(lambda: engine.tail == ["ready"])
    waited_from = clock.now
    assert engine.wait_exit(1.0) is None
    assert set(clock.sleeps) == {0.05} and 1.0 <= clock.now - waited_from < 1.06
    os.kill(engine.process.pid, signal.SIGTERM)
    killed_at = clock.now
    took = engine.wait_exit(60)
    assert took is not None and 0 <= took <= clock.now - killed_at
    # After the exit, a wait returns at once, as 0.
    assert engine.wait_exit(60) == 0.0


def test_a_wait_of_no_time_does_not_wait(started: Callable[..., Engine], clock: Clock) -> None:
    engine = started(python("import time; time.sleep(30)"))
    assert engine.wait_exit(0) is None and clock.sleeps == []


def test_a_stop_sends_sigterm_and_times_the_exit(started: Callable[..., Engine]) -> None:
    engine = started(python(PATIENT))
    until(lambda: engine.tail == ["ready"])
    took = engine.stop(10)
    assert took is not None and 0 <= took < 5
    assert engine.returncode == 0 and engine.tail[-1] == f"got {int(signal.SIGTERM)}"


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout(started: Callable[..., Engine], clock: Clock) -> None:
    engine = started(python(STUBBORN))
    until(lambda: engine.tail == ["ready"])
    assert engine.stop(2.0) is None
    assert clock.sleeps[:40] == [0.05] * 40
    assert engine.returncode == -signal.SIGKILL
    assert "[preflight] signal SIGTERM" in logged(engine)


def test_a_stop_of_an_ended_process_is_zero_and_sends_nothing(started: Callable[..., Engine]) -> None:
    engine = started(python("pass"))
    engine.wait_exit(10)
    assert engine.stop(10) == 0.0
    assert not any("signal" in line for line in logged(engine))


def test_a_kill_ends_the_whole_session(started: Callable[..., Engine]) -> None:
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(30)\n"
    )
    engine = started(python(code))
    until(lambda: bool(engine.tail))
    child = int(engine.tail[0])
    engine.kill()
    assert engine.returncode == -signal.SIGKILL

    def gone() -> bool:
        try:
            return Path(f"/proc/{child}/stat").read_text().split(") ")[1].startswith("Z")
        except FileNotFoundError:
            return True

    until(gone)
    assert "process exited rc=-9" in engine.log_path.read_text()
