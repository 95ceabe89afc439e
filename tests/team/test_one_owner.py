"""One owner for a worker's task: crash recovery leaves alone a task whose job the queue still holds.

A command started on the worker's host right after the worker was SIGKILLed sees the worker's
process gone and would end its task for review (crash recovery's rule for in-process runners);
the job's retry would then find nothing to resume. The task must be resumed by the next worker.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from core.cli.main import main as cli_main
from tests.team.conftest import (
    VERDICT_CITING_E1,
    assert_event_sequences_contiguous,
    sync_rows,
    worker_process,
)
from tests.team.test_reconnect import _batch
from tests.team.test_workers import _wait_for
from tests.zygote import ZygoteProcess


@pytest.mark.slow
def test_a_command_started_after_a_worker_died_does_not_steal_its_task(
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    processes: list[ZygoteProcess],
) -> None:
    script = tmp_path / "script.json"
    turn = {"delay_s": 2.0}
    search = {"name": "search_corpus", "arguments": {"query": "tides"}}
    conversations = [
        {
            "model": "agent",
            "turns": [{"tool_calls": [search], **turn}, {"content": "Tides: the Moon.", **turn}],
        },
        {"model": "validator", "turns": [{"content": VERDICT_CITING_E1}]},
    ]
    script.write_text(json.dumps({"conversations": conversations}), encoding="utf-8")
    (task_id,) = _batch(pg_url, 1, tmp_path, script, capsys)
    fast = ("--heartbeat", "0.5", "--stalled-after", "2", "--poll", "0.5")
    victim = worker_process(pg_url, script, *fast, "--name", "victim")
    processes.append(victim)
    _wait_for(  # the victim's agent waits on the model
        pg_url,
        f"select count(*) from events where task_id = '{task_id}' and kind = 'llm_request_snapshotted'",
        lambda rows: rows[0][0] >= 1,
        proc=victim,
        within_s=120,
    )
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=60)
    capsys.readouterr()
    assert cli_main(["list", "--db", pg_url]) == 0  # starts with crash recovery, on the same host
    assert sync_rows(pg_url, f"select status from tasks where id = '{task_id}'") == [("running",)]
    survivor = worker_process(pg_url, script, *fast, "--name", "survivor")
    processes.append(survivor)
    rows = _wait_for(
        pg_url,
        f"select status from tasks where id = '{task_id}'",
        lambda rows: rows[0][0] in ("awaiting_feedback", "needs_review", "failed"),
        proc=survivor,
        within_s=120,
    )
    story = sync_rows(
        pg_url,
        f"select kind, payload->>'to', payload->>'reason', payload->>'message' from events "
        f"where task_id = '{task_id}' and kind in ('task_status_changed', 'task_interrupted') order by id",
    )
    assert rows == [("awaiting_feedback",)], story  # resumed by the queue, not failed by recovery
    attempts = sync_rows(
        pg_url, f"select index, state from attempts where task_id = '{task_id}' order by index"
    )
    assert attempts == [(1, "interrupted"), (2, "finished")]
    survivor.send_signal(signal.SIGTERM)
    _, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, err.decode()
    assert "1 resumed from a dead worker" in err.decode()
    assert_event_sequences_contiguous(pg_url)
