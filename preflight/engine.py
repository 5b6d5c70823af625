"""One engine process: started in its own session, its output stamped line by line, stopped as the kubelet stops a pod."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from preflight.logscan import stamp
from preflight.probes import http

# How often a waiting step tells the terminal it is still waiting.
PROGRESS_SECONDS = 15.0


class Engine:
    """``argv`` run with ``env``; every output line goes to ``log`` prefixed with its time (RFC 3339)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], log: Path, *, cwd: Path, stop_argv: Sequence[str] | None = None) -> None:
        self.argv = list(argv)
        self.log_path = log
        # A container is signalled through its runtime (docker kill --signal ...), not through the client process.
        self.stop_argv = list(stop_argv) if stop_argv else None
        self.tail: list[str] = []
        self.exit_time: float | None = None
        self.returncode: int | None = None
        self._log = log.open("w", encoding="utf-8", buffering=1)
        self.started_at = datetime.now(UTC)
        self.t0 = time.monotonic()
        self._log.write(f"{stamp(self.started_at)} [preflight] start: {' '.join(self.argv)}\n")
        self.process = subprocess.Popen(
            self.argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=self._wait, daemon=True).start()

    def note(self, text: str) -> None:
        # A closed log: the run is over.
        with contextlib.suppress(ValueError):
            self._log.write(f"{stamp()} [preflight] {text}\n")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self._log.write(f"{stamp()} {line}\n")
            self.tail.append(line)
            if len(self.tail) > 400:
                del self.tail[:100]

    def _wait(self) -> None:
        returncode = self.process.wait()
        exited = time.monotonic()
        self._reader.join(timeout=5)
        self.note(f"process exited rc={returncode} after {exited - self.t0:.2f} s")
        self.returncode = returncode
        self.exit_time = exited

    @property
    def running(self) -> bool:
        return self.exit_time is None

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def wait_ready(self, url: str, timeout: float, progress: Callable[[str], None]) -> float | None:
        """Seconds from the start to the first ``/health`` 200; None when the process ended or ``timeout`` passed."""
        last_note = 0.0
        while self.elapsed() < timeout:
            if not self.running:
                return None
            status, _, _ = http("GET", url + "/health", timeout=2)
            if status == 200:
                ready = self.elapsed()
                self.note(f"/health 200 after {ready:.2f} s")
                return ready
            if self.elapsed() - last_note >= PROGRESS_SECONDS:
                last_note = self.elapsed()
                progress(f"waiting for /health: {self.elapsed():.0f} s; last line: {self.last_line()}")
            time.sleep(0.5)
        return None

    def last_line(self) -> str:
        return (self.tail[-1] if self.tail else "")[-160:]

    def send_signal(self, number: int = signal.SIGTERM) -> None:
        """Sends ``number`` to the engine's main process, as the kubelet does to a container's first process."""
        self.note(f"signal {signal.Signals(number).name}")
        if self.stop_argv:
            subprocess.run([*self.stop_argv, f"--signal={signal.Signals(number).name}"], check=False, capture_output=True)
        elif self.running:
            os.kill(self.process.pid, number)

    def wait_exit(self, timeout: float) -> float | None:
        """Seconds until the process exited (from now), or None when it still runs after ``timeout``."""
        started = time.monotonic()
        while self.running and time.monotonic() - started < timeout:
            time.sleep(0.05)
        return None if self.exit_time is None else max(0.0, self.exit_time - started)

    def stop(self, timeout: float) -> float | None:
        """SIGTERM, then SIGKILL to the whole session after ``timeout``; seconds from SIGTERM to exit (None: killed)."""
        if not self.running:
            return 0.0
        self.send_signal(signal.SIGTERM)
        took = self.wait_exit(timeout)
        self.kill()
        return took

    def kill(self) -> None:
        """SIGKILL to the engine's session (its API server, engine cores and compiler workers)."""
        if self.stop_argv:
            subprocess.run([*self.stop_argv, "--signal=SIGKILL"], check=False, capture_output=True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.wait_exit(10)
        self._reader.join(timeout=5)
        self._log.flush()

    def close(self) -> None:
        self.kill()
        self._log.close()
