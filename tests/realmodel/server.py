"""A real llama.cpp-family server process for the real-model suite, and the suite's run log.

Kept out of ``conftest.py`` so the tests and the conftest import one module (pytest imports a
conftest under a name of its own), and the run log the session summary prints is one list.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTEXT_WINDOW = 8192
READY_WITHIN_S = 180.0  # loading the model on a busy 2-core machine; a limit, not a wait


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LlamaServer:
    """One llama-cpp-python server process; ``kill`` is a real SIGKILL, ``start`` the same port again."""

    python: str
    model: str
    model_name: str
    log: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        # ``--cache``: the server keeps its last prompts' states and resumes a new prompt from the
        # longest one it begins with, as llama.cpp's own server does by default. The judge's
        # instructions open every validation, so each reads only its task and evidence: the suite
        # alone went from 238 s to 204 s of CPU, its plain task from 22 s to 16 s.
        argv = [
            self.python, "-m", "llama_cpp.server", "--model", self.model, "--model_alias", self.model_name,
            "--n_ctx", str(CONTEXT_WINDOW), "--cache", "true", "--n_threads", "1", "--n_threads_batch", "1", "--host", "127.0.0.1", "--port", str(self.port),
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_WITHIN_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the llama server exited with {self.process.returncode}: {self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.2)  # a child process has no readiness event to wait on: poll its port
        raise RuntimeError(f"the llama server did not answer within {READY_WITHIN_S:g} s: {self.log_tail()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def answered(self) -> int:
        """Chat completions the server answered with 200 so far (its access log)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return sum(
            1
            for line in text.splitlines()
            if "POST /v1/chat/completions HTTP/1.1" in line and '" 200' in line
        )

    def log_tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-2000:]


ROOT = HERE.parents[1]
VERDICT_NAMES = ("accepted", "rejected", "insufficient_evidence")
RUNS: list[dict[str, object]] = []


def record_run(**facts: object) -> None:
    """One run's line for the session summary (status, outcome, calls, time, verdict path)."""
    RUNS.append(facts)


def summary_lines() -> list[str]:
    """Each run as JSON, then how many validations ended in a parsed verdict."""
    parsed = sum(1 for r in RUNS if str(r.get("verdict_path", "")).split(" ", 1)[0] in VERDICT_NAMES)
    judged = sum(1 for r in RUNS if r.get("verdict_path") != "no validation")
    return [*(json.dumps(r) for r in RUNS), f"parsed verdicts: {parsed} of {judged} validations"]


def provisioned() -> dict[str, str] | None:
    result = subprocess.run(
        [sys.executable, str(HERE / "provision.py"), "--where"], capture_output=True, text=True, check=False
    )
    return json.loads(result.stdout) if result.returncode == 0 else None
