"""The resident renderer: a background process that keeps the provider SDKs imported and forks each render.

Importing the SDKs is most of a render's time (docs/reference.md, "What an offline render costs"). After a
render succeeds in its own process, it starts this one, handing it the third-party modules it imported.
Later renders of the same checkout and environment send it their arguments, folder, environment and
standard streams (file descriptors over a Unix socket); a child forked from it runs the render with the
project's code read from disk then. The resident process runs no project code but ``OWN_FILES``, so an edit
to the project is in the next render. Its socket is named after everything it depends on (interpreter,
import path, installed packages, ``OWN_FILES``, the variables the SDKs read at import): change one and the
next render starts a new one. It stops after ``IDLE_SECONDS`` without a render, or on
``python -m render.resident stop``.

Linux only: on macOS a fork without exec is not safe with native libraries. ``RENDER_RESIDENT=0`` turns it
off; it is off where ``CI`` is set, unless ``RENDER_RESIDENT=1``, since a CI job renders once.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import importlib
import io
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
import types
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from render.progress import Progress

IDLE_SECONDS = 15 * 60
# Importing these starts OS threads (helm_python loads Go's runtime): a forked child would hold a runtime whose
# threads are gone. The child imports them itself.
UNFORKABLE = ("helm_python",)
# What the SDKs and the interpreter read from the environment at start or import (the locale sets the streams'
# encoding): a resident process that read other values would render differently.
KEYED_VARIABLES = ("PYTHON", "PULUMI_", "GOOGLE_", "GRPC_", "OTEL_", "HELM_", "PROTOCOL_BUFFERS_", "TMPDIR", "LANG", "LC_")
# The project's files the resident process runs itself; every other project module is read by each render.
OWN_FILES = ("__init__.py", "resident.py", "progress.py")
STDIO = (0, 1, 2)
_HEADER = struct.Struct("!I")
# sun_path holds 108 bytes, its terminating NUL included (unix(7)).
_SOCKET_PATH_BYTES = 107


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    choice = environ.get("RENDER_RESIDENT", "")
    if choice == "0" or sys.platform != "linux":
        return False
    return choice == "1" or not environ.get("CI")


def key() -> str:
    """What the resident process's imports depend on, hashed: renders that agree on it may share one."""
    installed = [str(Path(path).stat().st_mtime_ns) for path in sys.path if path.endswith("site-packages") and Path(path).is_dir()]
    variables = sorted(f"{name}={value}" for name, value in os.environ.items() if name.startswith(KEYED_VARIABLES))
    own = [str((Path(__file__).parent / name).stat().st_mtime_ns) for name in OWN_FILES]
    parts = [sys.executable, sys.version, *sys.path, *installed, *own, *variables]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def home() -> Path | None:
    """The folder of this user's sockets and logs, or None when it is not private to them or too deep for a socket."""
    folder = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"vllm-gke-render-{os.getuid()}"
    if len(os.fsencode(address(folder))) > _SOCKET_PATH_BYTES:
        return None
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        status = folder.lstat()
    except OSError:
        return None
    private = folder.is_dir() and not folder.is_symlink() and status.st_uid == os.getuid() and status.st_mode & 0o077 == 0
    return folder if private else None


def address(folder: Path) -> Path:
    return folder / f"{key()}.sock"


def _send(connection: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    payload = json.dumps(message).encode()
    data = _HEADER.pack(len(payload)) + payload
    sent = socket.send_fds(connection, [data], list(fds)) if fds else 0
    connection.sendall(data[sent:])


def _receive(connection: socket.socket, most_fds: int = 0) -> tuple[dict[str, Any], list[int]]:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, most_fds) if most_fds else (connection.recv(1 << 16), [], 0, None)
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        more = connection.recv(1 << 16)
        if not more:
            for fd in fds:
                os.close(fd)
            raise ConnectionError("the other end closed before the whole message")
        data += more
    return json.loads(data[_HEADER.size :]), fds


def _request(folder: Path, message: Mapping[str, Any], fds: Sequence[int] = ()) -> tuple[socket.socket, dict[str, Any]] | None:
    """The connection and the resident process's first answer, or None when no resident process answers."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(address(folder)))
        _send(connection, message, fds)
        return connection, _receive(connection)[0]
    except (OSError, ValueError):
        connection.close()
        return None


def forward(argv: Sequence[str]) -> int | None:
    """The exit code of ``python -m render <argv>`` run by the resident process, or None to render here."""
    folder = home() if enabled() else None
    if folder is None:
        return None
    request = {"key": key(), "argv": list(argv), "cwd": str(Path.cwd()), "env": dict(os.environ)}
    try:
        # A resident process that is still loading the SDKs answers once it has.
        with Progress.on_terminal().step("handing the render to the resident renderer"):
            answer = _request(folder, request, STDIO)
    except KeyboardInterrupt:
        # Before the render's pid is known: the resident process interrupts it when this connection closes.
        return 128 + signal.SIGINT
    if answer is None:
        return None
    connection, first = answer
    with connection:
        if "pid" not in first:
            return None
        pid = int(first["pid"])
        while True:
            try:
                last, _ = _receive(connection)
                break
            except KeyboardInterrupt:
                # The terminal's Ctrl-C reaches this process only: the render runs in the resident's session.
                _interrupt(pid)
            except (OSError, ValueError):
                stopped = "error: the resident renderer stopped before the render ended; RENDER_RESIDENT=0 renders in this process"
                print(stopped, file=sys.stderr)
                return 1
    code = os.waitstatus_to_exitcode(int(last["status"]))
    return code if code >= 0 else 128 - code


def _interrupt(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)


def third_party_modules(loaded: Mapping[str, types.ModuleType]) -> list[str]:
    """The modules in ``loaded`` from the standard library and installed packages, in import order."""
    places = tuple(str(Path(sysconfig.get_paths()[kind]).resolve()) + os.sep for kind in ("stdlib", "platstdlib", "purelib", "platlib"))
    names = []
    for name, module in loaded.items():
        # A module a package imports lazily and nothing used yet (pulumi_gcp's subpackages) stays unloaded.
        if type(module) is not types.ModuleType or name.split(".")[0] in UNFORKABLE:
            continue
        file = module.__dict__.get("__file__")
        if file and str(Path(file).resolve()).startswith(places):
            names.append(name)
    return names


def start(loaded: Mapping[str, types.ModuleType]) -> bool:
    """Starts a resident process for this key, preloading the installed modules of ``loaded``; False when off or
    one already answers. The list is made only then: it resolves every module's file, 0.1 s a render."""
    folder = home() if enabled() else None
    if folder is None:
        return False
    answer = _request(folder, {"key": key(), "ping": True})
    if answer is not None:
        answer[0].close()
        return False
    modules = third_party_modules(loaded)
    with (folder / f"{key()}.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "render.resident", "serve"],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write("\n".join(modules).encode())
    # It outlives this process by design; the next render talks to it through its socket.
    process.returncode = 0
    return True


def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {os.getpid()} {line}", file=sys.stderr, flush=True)


def _os_threads() -> int:
    return len(list(Path("/proc/self/task").iterdir()))


def preload(modules: Iterable[str]) -> int:
    """Imports ``modules`` (those that fail are left to the render) and returns how many are loaded."""
    loaded = 0
    for name in modules:
        if name.split(".")[0] in UNFORKABLE:
            continue
        try:
            module = importlib.import_module(name)
            # Reading an attribute runs a lazily imported module, so a package runs before its modules as in the
            # render; not a dunder such as __name__, which pulumi's lazy modules answer without loading.
            getattr(module, "__all__", None)
        except Exception:  # a module that fails to import here fails the same way in the render, which reports it
            continue
        loaded += 1
    return loaded


def serve(folder: Path, modules: Iterable[str], idle_seconds: float = IDLE_SECONDS) -> str:
    """Serves renders until idle, stopped or outdated; returns why it stopped."""
    own_key = key()
    lock = (folder / f"{own_key}.lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return "another resident process serves this key"
    path = address(folder)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    # Renders that connect while the SDKs load wait for them instead of loading their own.
    listener.listen()
    try:
        started = time.monotonic()
        count = preload(modules)
        threads = _os_threads()
        if threads != 1:
            return f"{threads - 1} threads started while preloading; a forked render would lose them (see UNFORKABLE)"
        gc.freeze()
        _log(f"serving {path} with {count} modules preloaded in {time.monotonic() - started:.1f} s")
        return _serve(listener, own_key, idle_seconds)
    finally:
        path.unlink(missing_ok=True)
        listener.close()
        lock.close()


def _serve(listener: socket.socket, own_key: str, idle_seconds: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    # pid of each render -> its client's connection and the read end of a pipe that closes when it exits.
    renders: dict[int, tuple[socket.socket, int]] = {}
    stopping = ""
    idle_since = time.monotonic()
    while True:
        if not renders:
            if stopping:
                return stopping
            if key() != own_key:
                return "the environment changed"
        remaining = idle_since + idle_seconds - time.monotonic()
        if not renders and remaining <= 0:
            return f"idle for {idle_seconds:g} s"
        for event, _ in selector.select(None if renders else remaining):
            if event.fileobj is listener:
                stopping = _accept(listener, own_key, selector, renders) or stopping
            elif isinstance(event.fileobj, socket.socket):
                # The client hung up (Ctrl-C before it knew the pid, its terminal closed): nobody sees the render.
                # Unless the render ended earlier in this round, which closed the connection and reaped the pid.
                if int(event.data) in renders:
                    selector.unregister(event.fileobj)
                    _interrupt(int(event.data))
            else:
                pid = int(event.data)
                connection, ended = renders.pop(pid)
                selector.unregister(ended)
                os.close(ended)
                if connection.fileno() in selector.get_map():
                    selector.unregister(connection)
                _, status = os.waitpid(pid, 0)
                _log(f"render {pid} ended with status {status}")
                with connection, contextlib.suppress(OSError):  # OSError: the client is gone
                    _send(connection, {"status": status})
                idle_since = time.monotonic()


def _accept(listener: socket.socket, own_key: str, selector: selectors.BaseSelector, renders: dict[int, tuple[socket.socket, int]]) -> str:
    """Takes one request; returns why to stop when it asks to."""
    connection, _ = listener.accept()
    uid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
    try:
        request, fds = _receive(connection, len(STDIO))
    except (OSError, ValueError):
        connection.close()
        return ""
    if uid != os.getuid() or request.get("key") != own_key or ("argv" in request and len(fds) != len(STDIO)):
        for fd in fds:
            os.close(fd)
        with connection:
            _send(connection, {"refused": "another user, key or message"})
        return ""
    if "argv" not in request:
        with connection:
            _send(connection, {"stopping": True} if request.get("stop") else {"serving": True})
        return "asked to stop" if request.get("stop") else ""
    ended, running = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(ended)
        selector.close()
        listener.close()
        connection.close()
        for other, pipe in renders.values():
            other.close()
            os.close(pipe)
        _render(request, fds)
    os.close(running)
    for fd in fds:
        os.close(fd)
    _log(f"render {pid}: {' '.join(request['argv'])}")
    try:
        _send(connection, {"pid": pid})
    except OSError:
        _interrupt(pid)
    renders[pid] = (connection, ended)
    selector.register(ended, selectors.EVENT_READ, pid)
    selector.register(connection, selectors.EVENT_READ, pid)
    return ""


def _render(request: Mapping[str, Any], fds: Sequence[int]) -> NoReturn:
    """In the forked child: becomes the client's ``python -m render`` and exits with its code."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in zip(STDIO, fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(line_buffering=stream.isatty())
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [str(Path(__file__).with_name("__main__.py")), *request["argv"]]
        from render.cli import run

        code = run(request["argv"])
    except SystemExit as exit:
        # As the interpreter exits: None is success, any other object is printed and fails.
        if exit.code is None or isinstance(exit.code, int):
            code = exit.code or 0
        else:
            print(exit.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    except BaseException:  # the client must see what went wrong, as in its own process
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):
                stream.flush()
        os._exit(code)


def stop() -> bool:
    """Asks this key's resident process to stop once its renders end; False when none answers."""
    folder = home()
    answer = _request(folder, {"key": key(), "stop": True}) if folder else None
    if answer is None:
        return False
    answer[0].close()
    return bool(answer[1].get("stopping"))


def main(argv: Sequence[str]) -> int:
    if argv == ["serve"]:
        folder = home()
        if folder is None:
            return 1
        gc.disable()
        _log(f"stopped: {serve(folder, sys.stdin.read().split())}")
        return 0
    if argv == ["stop"]:
        print("stopping" if stop() else "no resident renderer for this environment")
        return 0
    print("usage: python -m render.resident {serve|stop}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
