"""Real ``run`` processes SIGKILLed at seeded random points leave a workspace recovery can mend.

Each kill is of a separate command-line process on the scripted provider, in its own workspace, at
a point chosen by observed progress: the test waits (bounded, by count of polls) until the
process has committed a seeded number of events, then kills it. Three processes run side by side,
forked from the test process's zygote (tests/zygote.py), so a start costs no imports. After each
kill ``recover`` runs and the workspace must be sound: SQLite's integrity check passes, every session's event ``seq`` runs
1, 2, 3 ... with no gap and matches the session's counter, no task or run is left running or
validating, and every attempt of the killed task has a final recorded state.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from core.domain.facts import AttemptState
from tests import zygote
from tests.integration.conftest import child_cli
from tests.zygote import ZygoteProcess

KILLS = 10
PARALLEL = 3  # each victim is busy on the CPU while it runs: more than the cores only thrashes
SEED = 1717
POLLS = 4_000  # upper bound on polling rounds; each waits POLL_WAIT_S (about three minutes in all)
POLL_WAIT_S = 0.05

VERDICT = {
    "goal_achievement": "g",
    "completeness": "c",
    "rule_compliance": "r",
    "status": "insufficient_evidence",
    "score": 0.3,
}
# Every turn waits, so a kill decided on an observed event lands while the process is alive.
SCRIPT = {
    "conversations": [
        {
            "model": "agent",
            "turns": [
                {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides"}}], "delay_s": 0.4},
                {
                    "tool_calls": [{"name": "read_document", "arguments": {"document_id": "tides.md"}}],
                    "delay_s": 0.4,
                },
                {"content": "Tides come mainly from the Moon's gravity.", "delay_s": 0.4},
            ],
        },
        {"model": "validator", "turns": [{"content": json.dumps(VERDICT), "delay_s": 0.4}]},
    ]
}
# A full run commits 16 events (see test output of a clean run): 1-13 while running, 14 enters
# validating, 15-16 finish. Killing after 0..14 events keeps a delayed model call ahead of the kill.
MAX_EVENTS_BEFORE_KILL = 14


@dataclass
class Victim:
    workspace: Path
    target_events: int
    process: ZygoteProcess
    killed_after: int | None = None

    @property
    def db(self) -> Path:
        return self.workspace / "ws.sqlite3"


def _events_committed(db: Path) -> int | None:
    """Events another process has committed; None until its schema exists."""
    if not db.exists():
        return None
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            (tasks,) = conn.execute("select count(*) from tasks").fetchone()
            (events,) = conn.execute("select count(*) from events").fetchone()
    except sqlite3.OperationalError:
        return None  # schema not created yet, or the writer is mid-migration
    return int(events) if tasks else None


def _start(workspace: Path, target: int) -> Victim:
    corpus = workspace / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "tides.md").write_text("# Tides\n\nTides are caused mainly by the Moon's gravity.\n")
    (workspace / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    cmd, env = child_cli(
        "run",
        "What causes tides?",
        db=workspace / "ws.sqlite3",
        root=workspace,
        EVIDENCE_DESK_LLM_NUM_RETRIES="0",
    )
    process = zygote.spawn(cmd, env, stdout=zygote.DEVNULL, stderr=zygote.DEVNULL)
    return Victim(workspace, target, process)


def _kill_on_progress(workspaces: list[tuple[Path, int]]) -> list[Victim]:
    """Run the victims ``PARALLEL`` at a time and kill each once it has committed its target number
    of events (or when polling is exhausted: the kill then lands wherever the run is, which is
    still a kill at a random point)."""
    waiting = list(workspaces)
    running: list[Victim] = []
    done: list[Victim] = []
    for _ in range(POLLS):
        while waiting and len(running) < PARALLEL:
            running.append(_start(*waiting.pop(0)))
        for victim in list(running):
            committed = _events_committed(victim.db)
            if victim.process.poll() is None and (committed is None or committed < victim.target_events):
                continue
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(timeout=60)
            victim.killed_after = committed
            running.remove(victim)
            done.append(victim)
        if not running and not waiting:
            return done
        if running:  # between polls, wait on a victim itself: its exit is noticed at once
            with contextlib.suppress(subprocess.TimeoutExpired):
                running[0].process.wait(timeout=POLL_WAIT_S)
    for victim in running:
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(timeout=60)
        victim.killed_after = _events_committed(victim.db)
    return [*done, *running]


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def _assert_sound(db: Path) -> None:
    assert _rows(db, "pragma integrity_check") == [("ok",)]
    sessions = dict(_rows(db, "select id, next_seq from sessions"))
    seqs: dict[object, list[object]] = {sid: [] for sid in sessions}
    for session_id, seq in _rows(db, "select session_id, seq from events order by session_id, seq"):
        seqs[session_id].append(seq)
    for session_id, found in seqs.items():
        assert found == list(range(1, len(found) + 1)), (session_id, found)
        assert sessions[session_id] == len(found) + 1, (session_id, sessions[session_id], len(found))
    assert _rows(db, "select status from tasks where status in ('running', 'validating')") == []
    assert _rows(db, "select id from runs where state = 'running'") == []
    states = {state for (state,) in _rows(db, "select state from attempts")}
    assert states <= {s.value for s in AttemptState} - {AttemptState.RUNNING.value}, states


@pytest.mark.slow
def test_sigkill_at_random_points_then_recover(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(SEED)
    targets = [rng.randint(0, MAX_EVENTS_BEFORE_KILL) for _ in range(KILLS)]
    victims = _kill_on_progress([(tmp_path / f"kill-{i:02d}", target) for i, target in enumerate(targets)])
    assert len(victims) == KILLS

    interrupted = 0
    for victim in victims:
        assert victim.process.returncode == -signal.SIGKILL, (victim.target_events, victim.killed_after)
        was_active = bool(
            victim.db.exists()
            and _events_committed(victim.db) is not None
            and _rows(victim.db, "select 1 from tasks where status in ('running', 'validating')")
        )
        capsys.readouterr()
        # --create: a victim killed before its workspace file existed has none to recover yet
        assert cli_main(["recover", "--db", str(victim.db), "--create", "--json"]) == 0
        recovered = json.loads(capsys.readouterr().out)
        if not victim.db.exists() or _events_committed(victim.db) is None:
            continue  # killed before the task was written: nothing to recover, nothing to check
        _assert_sound(victim.db)
        assert len(recovered) == int(was_active)
        if was_active:
            interrupted += 1
            ((state,),) = _rows(victim.db, 'select state from attempts order by "index" desc limit 1') or [
                ("missing",)
            ]
            assert state in (AttemptState.INTERRUPTED.value, AttemptState.FINISHED.value, "missing")
            kinds = {kind for (kind,) in _rows(victim.db, "select kind from events")}
            assert "task_interrupted" in kinds
    # Seeded targets: most kills land on a task that is running or validating.
    assert interrupted >= KILLS // 2, [(v.target_events, v.killed_after) for v in victims]
