"""The zygote's children behave as the ``subprocess`` children they replace (tests/zygote.py).

What the suites rely on: the exit status as Popen reports it (a code, or minus the signal that
killed the child), streams wired as asked, the environment and working directory of the request
(not the zygote's), and stderr readable line by line while the child runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests import zygote

ROOT = Path(__file__).resolve().parents[2]


def test_exit_codes_and_output_come_back_as_subprocess_reports_them() -> None:
    done = zygote.run(["-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert zygote.run(["-c", "raise SystemExit('refused')"]).returncode == 1
    crashed = zygote.run(["-c", "raise ValueError('boom')"])
    assert crashed.returncode == 1 and "ValueError: boom" in crashed.stderr


def test_the_command_line_runs_with_its_arguments_environment_and_directory(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVIDENCE_DESK_MAX_TOOL_ITERATIONS": "many"}
    refused = zygote.run(["-m", "core.cli", "list", "--db", str(tmp_path / "ws.sqlite3")], env)
    assert refused.returncode == 4 and "max_tool_iterations" in refused.stderr
    code = "import os, sys; print(os.getcwd(), os.environ['ZYGOTE_PROBE'], sys.argv[1:])"
    with zygote.spawn(
        ["-c", code, "a", "b"], {**os.environ, "ZYGOTE_PROBE": "seen"}, stdout=zygote.PIPE, cwd=tmp_path
    ) as child:
        out, _ = child.communicate(timeout=60)
    assert out == f"{tmp_path} seen ['a', 'b']\n".encode()
    assert "ZYGOTE_PROBE" not in os.environ  # the request's environment, not this process's


def test_a_child_killed_with_sigkill_reports_the_signal_and_its_stderr_streams() -> None:
    code = "import signal, sys\nprint('started', file=sys.stderr, flush=True)\nsignal.pause()  # until killed"
    child = zygote.spawn(["-c", code], stderr=zygote.PIPE)
    assert child.stderr is not None
    assert child.stderr.readline() == b"started\n"  # read while it runs
    assert child.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0)
    child.kill()
    assert child.wait(timeout=60) == -signal.SIGKILL
    assert child.stderr.read() == b""  # the pipe's last writer is gone
    child.stderr.close()
    child.kill()  # reaped already: nothing is signalled (the pid may be another process's now)


def test_only_module_or_code_runs() -> None:
    with pytest.raises(ValueError, match="-m MODULE or -c CODE"):
        zygote.spawn(["script.py"])


def test_a_child_ends_as_the_interpreter_would_with_a_thread_pool_left_running() -> None:
    """A pool's workers are told to stop by threading's exit hooks; joined without them, they hang."""
    code = "from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(2)\npool.submit(print, 'ran')"
    done = zygote.run(["-c", code], timeout=60)
    assert (done.returncode, done.stdout) == (0, "ran\n")


def test_requests_that_fail_on_the_way_leave_the_zygote_serving(tmp_path: Path) -> None:
    closed = 999
    with pytest.raises(OSError):
        os.fstat(closed)  # not open here, so sending it fails in the client
    with pytest.raises(OSError):
        zygote.spawn(["-c", "pass"], stdout=closed)
    missing = zygote.run(["-c", "pass"], cwd=tmp_path / "missing", timeout=60)  # fails in the child
    assert missing.returncode == 1 and "FileNotFoundError" in missing.stderr
    assert zygote.run(["-c", "print('still serving')"], timeout=60).stdout == "still serving\n"
