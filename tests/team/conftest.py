"""Fixtures for the team workspace: batch files, scripts, worker processes and database reads."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests import zygote
from tests.zygote import ZygoteProcess

ROOT = Path(__file__).resolve().parents[2]

VERDICT_OK = json.dumps(
    {
        "goal_achievement": "met",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "accepted",
        "score": 0.9,
        "issues": [],
        "recommended_revision_prompt": "",
        "category": "none",
        "citations": [],
    }
)
# A verdict on a resumed task: the killed attempt's packet (its search's result, E1) is evidence
# the validator is shown (issue 32), and an acceptance citing none of it is not an endorsement.
VERDICT_CITING_E1 = json.dumps(
    {
        **json.loads(VERDICT_OK),
        "citations": [{"claim": "tides", "evidence_id": "E1", "quote": "tides", "verdict": "supported"}],
    }
)


def write_script(path: Path, *, agent_delay: float = 0.0, answer: str = "The answer is done.") -> Path:
    """An agent that answers once (after ``agent_delay`` seconds, waiting like a real provider)."""
    script = {
        "conversations": [
            {"model": "agent", "turns": [{"content": answer, "delay_s": agent_delay}]},
            {"model": "validator", "turns": [{"content": VERDICT_OK}]},
        ]
    }
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: int, *, prefix: str = "Question") -> Path:
    lines = [
        json.dumps({"text": f"{prefix} {i}?", "title": f"Q{i}", "metadata": {"row": i}}) for i in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def sync_rows(db_url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """Read the workspace from outside any store (as another process would)."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        sync = url.set(drivername="sqlite")
    else:
        sync = url.set(drivername="postgresql+psycopg")
    engine = create_engine(sync)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql), params).all()]
    finally:
        engine.dispose()


def assert_event_sequences_contiguous(db_url: str) -> None:
    sessions = dict(sync_rows(db_url, "select id, next_seq from sessions"))
    seqs: dict[Any, list[int]] = {sid: [] for sid in sessions}
    for sid, seq in sync_rows(db_url, "select session_id, seq from events order by session_id, seq"):
        seqs[sid].append(int(seq))
    for sid, found in seqs.items():
        assert found == list(range(1, len(found) + 1)), (sid, found)
        assert sessions[sid] == len(found) + 1, sid


def worker_process(db_url: str, script: Path, *args: str, **env: str) -> ZygoteProcess:
    """``evidence-desk worker`` as a real child process (one a test can SIGKILL), forked by the
    zygote (tests/zygote.py) rather than started from scratch."""
    argv = ["-m", "core.cli", "worker", "--db", db_url, "--script", str(script), *args]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "EVIDENCE_DESK_LLM_NUM_RETRIES": "0", **env}
    return zygote.spawn(argv, full_env, stdout=zygote.DEVNULL, stderr=zygote.PIPE)


@pytest.fixture
def processes() -> Iterator[list[ZygoteProcess]]:
    """Child processes a test starts; any still alive at the end are killed (no leaks)."""
    started: list[ZygoteProcess] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=60)
        if p.stderr is not None:
            p.stderr.close()


class LogTail:
    """The stderr lines of a child process, read by a thread as they come, so a test can wait for
    one ("database unreachable") as an event rather than sleep and hope."""

    def __init__(self, proc: ZygoteProcess) -> None:
        assert proc.stderr is not None
        self.proc = proc
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def count(self, needle: str) -> int:
        with self._changed:
            return sum(needle in line for line in self.lines)

    def wait_for(self, needle: str, times: int = 1, timeout: float = 90) -> None:
        """Until ``needle`` appeared on ``times`` lines; fails at once if the process ended first."""
        with self._changed:
            ok = self._changed.wait_for(
                lambda: sum(needle in line for line in self.lines) >= times or not self._thread.is_alive(),
                timeout=timeout,
            )
            found = sum(needle in line for line in self.lines)
        assert ok and found >= times, f"no {needle!r} x{times} in:\n" + self.text()

    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def finish(self, timeout: float = 120) -> int:
        """Wait for the process and its last line; its exit code."""
        code = self.proc.wait(timeout=timeout)
        self._thread.join(timeout=timeout)
        return code
