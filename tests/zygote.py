"""``evidence-desk`` child processes forked from one that has already imported the product.

The core suite starts the command line as a real child process about a hundred times: workers a
test SIGKILLs, runs it interrupts, the bad-input cases (and the real-model suite its runs, the
desk's suite its screenshot tool). Each start used to pay the interpreter's
start and the imports again (litellm's alone 2-3 s of CPU, about three quarters of what those
children cost in all), and on a 2-core CI machine that was minutes of the core suite.

A zygote (Android's word; CPython's ``multiprocessing`` forkserver does the same) pays them once
per test process: it imports what a command needs, then forks a child for each start. The child is
a real process with its own pid, fds, environment and working directory: a test kills it with
SIGKILL, reads its stderr line by line, and gets its exit status the way ``subprocess`` reports it.
What it skips is the interpreter's start and the imports, which ``tests/core/test_packaging.py``,
``test_bytecode.py`` and the few tests that ``exec`` the command keep covering.

The zygote has one thread (forking a process with more is unsafe); it refuses to start otherwise.
It exits when its stdin, a pipe from the test process, closes: when that process ends, however.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
_HEADER = struct.Struct("!I")
DEVNULL = subprocess.DEVNULL
PIPE = subprocess.PIPE


class ZygoteProcess:
    """A forked ``evidence-desk`` process: the part of ``subprocess.Popen`` the tests use.

    The zygote is its parent and reaps it; its exit status comes back on this process's socket,
    so ``wait`` blocks on that socket, never on a timer."""

    def __init__(
        self, conn: socket.socket, pid: int, read: bytes, stdout: IO[bytes] | None, stderr: IO[bytes] | None
    ) -> None:
        self._conn = conn
        self._buffer = read  # what came after the pid: the exit status already, if it ended at once
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = None
        self._lock = threading.Lock()  # one reader of the socket at a time (its timeout is shared)

    def _status(self, timeout: float | None) -> int | None:
        with self._lock:
            return self._read_status(timeout)

    def _read_status(self, timeout: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        self._conn.settimeout(timeout)
        try:
            while b"\n" not in self._buffer:
                chunk = self._conn.recv(64)
                if not chunk:
                    raise RuntimeError(f"the zygote went away before reporting process {self.pid}")
                self._buffer += chunk
        except (TimeoutError, BlockingIOError):
            return None
        self.returncode = os.waitstatus_to_exitcode(int(self._buffer.split(b"\n", 1)[0]))
        self._conn.close()
        return self.returncode

    def poll(self) -> int | None:
        return self._status(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"evidence-desk (pid {self.pid})", timeout or 0)
        return code

    def communicate(self, timeout: float | None = None) -> tuple[bytes | None, bytes | None]:
        """The piped streams read to their ends (each on a thread of its own, so neither fills up
        while the other is read), then the exit."""
        read: dict[int, bytes] = {}

        def drain(index: int, stream: IO[bytes]) -> None:
            read[index] = stream.read()
            stream.close()

        readers = [
            threading.Thread(target=drain, args=(i, s), daemon=True)
            for i, s in enumerate((self.stdout, self.stderr))
            if s is not None and not s.closed
        ]
        for reader in readers:
            reader.start()
        self.wait(timeout)
        for reader in readers:
            reader.join(timeout)
            if reader.is_alive():  # a grandchild may hold the pipe open
                raise subprocess.TimeoutExpired(f"evidence-desk (pid {self.pid})", timeout or 0)
        return (read.get(0) if self.stdout else None), (read.get(1) if self.stderr else None)

    def send_signal(self, sig: int) -> None:
        try:
            running = self.poll() is None
        except RuntimeError:  # the zygote is gone, and killed its children as it went
            return
        if running:  # once reaped, the pid may be another process's (as Popen guards)
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def __enter__(self) -> ZygoteProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    stdin: int | IO[Any] | None = DEVNULL,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    cwd: str | Path | None = None,
) -> ZygoteProcess:
    """``python ARGV`` as a child process, where ARGV starts ``-m MODULE`` or ``-c CODE``: what
    follows ``sys.executable`` in a ``subprocess.Popen`` call. Streams as Popen takes them (None
    inherits this process's, ``PIPE`` gives a readable binary pipe, ``DEVNULL``, or a file)."""
    if len(argv) < 2 or argv[0] not in ("-m", "-c"):
        raise ValueError(f"the zygote runs -m MODULE or -c CODE, not {list(argv)[:2]}")
    given: list[int] = []
    mine: list[int] = []  # fds opened here for the child, closed once it has them
    pipes: dict[int, IO[bytes]] = {}
    for target, stream in enumerate((stdin, stdout, stderr)):
        if stream is None:
            given.append(target)
        elif stream == DEVNULL:
            fd = os.open(os.devnull, os.O_RDWR)
            mine.append(fd)
            given.append(fd)
        elif stream == PIPE:
            if target == 0:
                raise ValueError("stdin=PIPE is not supported; the command line reads no stdin here")
            read_end, write_end = os.pipe()
            pipes[target] = os.fdopen(read_end, "rb")
            mine.append(write_end)
            given.append(write_end)
        elif isinstance(stream, int):
            given.append(stream)
        else:
            given.append(stream.fileno())
    request = {
        "argv": list(argv),
        "env": dict(os.environ if env is None else env),
        "cwd": str(cwd) if cwd is not None else os.getcwd(),  # Popen's default: the caller's
    }
    try:
        conn, pid, read = _zygote().start(request, given)
    finally:
        for fd in mine:
            os.close(fd)
    return ZygoteProcess(conn, pid, read, pipes.get(1), pipes.get(2))


def run(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = 120,
    cwd: str | Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` (as ``spawn`` takes it) to its end, its output captured as text (``subprocess.run``'s
    ``capture_output=True, text=True``). Files, not pipes, take the output: nothing to drain."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = spawn(argv, env, stdout=out, stderr=err, cwd=cwd)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        texts = []
        for stream in (out, err):
            stream.seek(0)
            texts.append(stream.read().decode(errors="replace"))
    return subprocess.CompletedProcess(list(argv), code, texts[0], texts[1])


class _Client:
    """This test process's zygote, started on first use."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="evidence-desk-zygote-")
        self.path = os.path.join(self._folder.name, "socket")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.zygote", self.path],
            stdin=subprocess.PIPE,  # its lifeline: closed when this process ends
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        assert self._process.stdout is not None
        ready = self._process.stdout.readline()
        if ready != b"ready\n":
            self._process.kill()
            raise RuntimeError(f"the zygote did not start: {ready!r} (exit {self._process.wait()})")
        atexit.register(self.close)

    def start(self, request: dict[str, Any], fds: list[int]) -> tuple[socket.socket, int, bytes]:
        """A connection the child's exit status will come on, its pid, and what was read past it."""
        payload = json.dumps(request).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [_HEADER.pack(len(payload)) + payload], fds)
            reply = b""
            while b"\n" not in reply:
                chunk = conn.recv(64)
                if not chunk:
                    raise RuntimeError("the zygote could not fork: " + reply.decode(errors="replace"))
                reply += chunk
            line, rest = reply.split(b"\n", 1)
            return conn, int(line), rest
        except BaseException:
            conn.close()  # else the zygote waits on a request that never comes
            raise

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=60)
        self._folder.cleanup()


_client: _Client | None = None
_client_lock = threading.Lock()


def _zygote() -> _Client:
    global _client
    with _client_lock:
        if _client is None:
            _client = _Client()
        return _client


# The zygote's side.


def _preload() -> None:
    """What the commands the tests start would import: litellm and its provider stack, the command
    line and every command group, the stores' drivers and the worker."""
    from core.llm.gateway import warm_up_litellm

    warm_up_litellm()
    import importlib

    from core.cli.main import build_parser

    build_parser()
    for name in (
        "aiosqlite",
        "asyncpg",
        "sqlalchemy.dialects.sqlite.aiosqlite",
        "sqlalchemy.dialects.postgresql.asyncpg",
    ):
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request; its fds are closed here if the rest of it never comes (a bound, not a wait:
    the client sends it whole at once)."""
    conn.settimeout(30)
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    try:
        if len(fds) != 3:
            raise EOFError(f"{len(fds)} streams came with the request, not 3")
        data = _read_to(conn, data, _HEADER.size)
        (size,) = _HEADER.unpack_from(data)
        data = _read_to(conn, data, _HEADER.size + size)
        request = json.loads(data[_HEADER.size : _HEADER.size + size])
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, list(fds)


def _read_to(conn: socket.socket, data: bytes, size: int) -> bytes:
    while len(data) < size:
        more = conn.recv(65536)
        if not more:
            raise EOFError("request cut short")
        data += more
    return data


def _exit_code(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _child(request: dict[str, Any], fds: list[int], keep_closed: list[int]) -> None:
    """The forked child: the request's streams, environment and directory, then the program, as
    ``python -m MODULE ARGS`` or ``python -c CODE ARGS`` would run it. It never returns: whatever
    fails, it ends here with ``os._exit`` rather than fall back into the zygote's loop."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in keep_closed:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        flag, target, *args = request["argv"]
        if flag == "-m":
            sys.argv = [target, *args]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *args]
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = 1
    finally:
        try:
            # As the interpreter ends: threading's own exit hooks (a thread pool's workers are told
            # to stop there, so joining them without it hangs) and its non-daemon threads joined,
            # which its private _shutdown does for the interpreter; then atexit, then the streams.
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
        finally:
            os._exit(code)


def serve(path: str) -> None:
    _preload()
    if threading.active_count() != 1:
        raise SystemExit(f"the zygote cannot fork safely: threads {threading.enumerate()}")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd hears of exits
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)  # the lifeline
    selector.register(wake_r, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    conn, _ = listener.accept()
                    try:
                        request, fds = _recv_request(conn)
                    except (OSError, EOFError, ValueError) as exc:
                        conn.close()
                        print(f"zygote: bad request: {exc}", file=sys.stderr)
                        continue
                    try:
                        pid = os.fork()
                    except OSError as exc:  # the client reads no pid and says the fork failed
                        with contextlib.suppress(OSError):
                            conn.sendall(f"fork: {exc}".encode())
                        conn.close()
                        pid = -1
                    if pid == 0:
                        others = [c.fileno() for c in children.values()]
                        closing = [
                            listener.fileno(),
                            selector.fileno(),
                            wake_r,
                            wake_w,
                            conn.fileno(),
                            *others,
                        ]
                        _child(request, fds, closing)
                    for fd in fds:
                        os.close(fd)
                    if pid > 0:
                        children[pid] = conn
                        with contextlib.suppress(OSError):  # the test may have let go already
                            conn.sendall(f"{pid}\n".encode())
                elif key.fileobj == 0:
                    if not os.read(0, 4096):
                        return
                else:
                    while True:
                        try:
                            if not os.read(wake_r, 4096):
                                break
                        except BlockingIOError:
                            break
                _reap(children)
    finally:  # however the zygote ends, no child of its outlives it unreported
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # the test may have let go of it
                conn.sendall(f"{status}\n".encode())
            conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
