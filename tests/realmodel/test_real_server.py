"""Real tasks through the command line against a real llama.cpp-family server and a real model.

SmolLM2-135M answers badly; these tests assert the product's honesty, never the model's quality:
every task comes to rest in an honest status, nothing prints a traceback, the validator's prompt
carries the evidence, the model's window is respected, every answered call is counted, and a server
killed mid-run is survived. Each run's status, outcome, calls, time and verdict path are written to
the session's summary (``tests/realmodel/conftest.py``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests import zygote
from tests.realmodel.server import CONTEXT_WINDOW, ROOT, LlamaServer, record_run

RESTING = {"awaiting_feedback", "needs_review", "needs_revision", "failed"}
VERDICTS = {"accepted", "rejected", "insufficient_evidence"}
RUN_LIMIT_S = 900.0  # a bound on a stuck run, not an expectation
CORPUS = {
    "tides.md": "# Tides\n\nTides are caused mainly by the Moon's gravity. Most coasts see two high tides a day.\n",
    "everest.md": "# Mount Everest\n\nMount Everest is 8,849 metres above sea level (2020 survey).\n",
}
REAL = "openai/{name}"
_SCRIPTED_VERDICT = json.dumps(
    {
        "goal_achievement": "answered",
        "completeness": "complete",
        "rule_compliance": "no rules",
        "status": "rejected",
        "score": 0.3,
        "issues": ["the answer is not supported by the evidence"],
        "category": "goal_missed",
    }
)
SCRIPT = {
    "conversations": [
        {
            "model": "agent",
            "turns": [
                {"tool_calls": [{"name": "search_corpus", "arguments": {"query": "Everest"}}]},
                {"content": "Mount Everest is 8,849 metres above sea level, per the 2020 survey [E1]."},
            ],
        },
        {
            # A judge's request holds the agent's answer as an assistant message, so turn k is asked
            # with k >= 1: the same verdict for each.
            "model": "validator",
            "turns": [{"content": _SCRIPTED_VERDICT}] * 4,
        },
    ]
}


def _config(tmp: Path, server: LlamaServer, *, agent: str, validator: str) -> Path:
    real = REAL.format(name=server.model_name)
    lines = [
        f'agent_model = "{agent if agent != "real" else real}"',
        f'validator_model = "{validator if validator != "real" else real}"',
        f'planner_model = "{real}"',
        "max_validation_attempts = 1",
        "max_schema_retries = 1",
        "max_tool_iterations = 2",
        "llm_num_retries = 4",
        "llm_timeout_s = 300",
        "validator_timeout_s = 600",
    ]
    # A profile names its role's model (it wins over ``agent_model``), so scripted roles get none.
    roles = {"agent": (agent, 64), "validator": (validator, 320), "planner": ("real", 192)}
    for role, (which, max_tokens) in roles.items():
        if which != "real":
            continue
        lines += [
            f"[profiles.{role}]",
            f'model = "{real}"',
            f'api_base = "{server.api_base}"',
            "no_api_key = true",
            "temperature = 0",
            f"max_tokens = {max_tokens}",
            f"context_window = {CONTEXT_WINDOW}",
        ]
    path = tmp / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    (tmp / "script.json").write_text(json.dumps(SCRIPT))
    corpus = tmp / "corpus"
    corpus.mkdir(exist_ok=True)
    for name, text in CORPUS.items():
        (corpus / name).write_text(text)
    return path


def _cli(tmp: Path, config: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    argv = [
        "-m",
        "core.cli",
        *args,
        "--db",
        str(tmp / "ws.sqlite3"),
        "--create",  # the first command makes the workspace
        "--script",
        str(tmp / "script.json"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVIDENCE_DESK_CONFIG_FILE": str(config)}
    return argv, env


def _run(
    tmp: Path, config: Path, *args: str
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str], float]:
    argv, env = _cli(tmp, config, "run", "--json", *args)
    started = time.monotonic()
    done = zygote.run(argv, env, timeout=RUN_LIMIT_S)
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr[-3000:]
    assert done.returncode in (0, 5), (done.returncode, done.stderr[-3000:])  # 5: the task failed, said so
    return json.loads(done.stdout), done, elapsed


def _rows(tmp: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(tmp / "ws.sqlite3") as db:
        return list(db.execute(sql, params))


def _validation(tmp: Path, task_id: str) -> tuple[str, dict[str, Any], str] | None:
    rows = _rows(
        tmp, "SELECT status, debug, prompt FROM validations WHERE task_id = ? ORDER BY created_at", task_id
    )
    if not rows:
        return None
    status, debug, prompt = rows[-1]
    return status, json.loads(debug), prompt or ""


def _answered_calls(tmp: Path, task_id: str) -> int:
    """Answered calls the workspace counted, each once.

    A run's kept responses, a run's answered-but-dropped replies (a turn cut at the output limit or
    by the server, retried), the calls outside runs (planner, output-schema re-asks and repairs,
    recorded as ``model_calls_recorded``) and the validator's calls.
    """
    events = _rows(tmp, "SELECT kind, payload FROM events WHERE task_id = ?", task_id)
    responses = sum(1 for kind, _ in events if kind == "llm_response_received")
    dropped = sum(
        1
        for k, p in events
        if k == "llm_call_failed" and json.loads(p).get("kind") in {"truncated", "stream_cut"}
    )
    # A team node's verdict is counted by its validation snapshot already; the product records its
    # calls again as "node-verdict" only because such a verdict writes no validation row.
    outside = sum(
        int(json.loads(p).get("calls") or 0)
        for k, p in events
        if k == "model_calls_recorded" and json.loads(p).get("purpose") != "node-verdict"
    )
    judged = sum(
        int(json.loads(p).get("llm_calls") or 0) for k, p in events if k == "task_validation_snapshotted"
    )
    return responses + dropped + outside + judged


def _check_task(
    tmp: Path, server: LlamaServer, label: str, summary: dict[str, Any], elapsed: float, served: int
) -> tuple[str, dict[str, Any], str] | None:
    """What every run must show, whatever the model said; the run's line in the session summary."""
    task_id, status = summary["id"], summary["status"]
    assert status in RESTING, summary
    validation = _validation(tmp, task_id)
    counted = _answered_calls(tmp, task_id)
    path = "no validation"
    if validation is not None:
        verdict, debug, _prompt = validation
        assert verdict in VERDICTS | {"validator_error"}
        # The window is respected: the judge's prompt was measured against the server's own window.
        assert int(debug.get("prompt_tokens") or 0) <= CONTEXT_WINDOW, debug
        contract = debug.get("structured_contract")
        path = f"{verdict} via {contract or 'no judge call'}"
        if debug.get("contract_fallbacks"):
            path += " (" + ", ".join(f.split(":", 1)[0] for f in debug["contract_fallbacks"]) + ")"
        if verdict == "validator_error":
            path += f": {str(debug.get('error'))[:160]}"
    record_run(
        label=label,
        status=status,
        outcome=summary.get("validation_outcome") or summary.get("outcome"),
        calls=counted,
        served=served,
        seconds=round(elapsed, 1),
        verdict_path=path,
        tokens=summary.get("tokens", {}).get("total"),
    )
    return validation


def _served(server: LlamaServer, before: int) -> int:
    return server.answered() - before


def _snapshots(tmp: Path) -> int:
    """Requests the child run has recorded as sent (0 before its database has its tables)."""
    if not (tmp / "ws.sqlite3").exists():
        return 0
    try:
        return int(_rows(tmp, "SELECT COUNT(*) FROM events WHERE kind = 'llm_request_snapshotted'")[0][0])
    except sqlite3.OperationalError:
        return 0


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def test_plain_task(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="real", validator="real")
    before = llama.answered()
    summary, _done, elapsed = _run(workdir, config, "What is the capital of France? Answer in one sentence.")
    served = _served(llama, before)
    validation = _check_task(workdir, llama, "plain", summary, elapsed, served)
    assert validation is not None
    _verdict, debug, prompt = validation
    # llama-cpp-python 0.3.36 answers 500 to json_schema: negotiated down to its grammar-backed JSON mode.
    assert debug["structured_contract"] == "json_object", debug
    assert (
        debug["contract_fallbacks"][0].startswith("json_schema refused")
        and "json_object" in debug["contract_fallbacks"][0]
    )
    answer = _rows(workdir, "SELECT final_output FROM attempts WHERE task_id = ?", summary["id"])[0][0] or ""
    assert answer.strip()[:40] in prompt  # the answer under review is what the judge read
    # Every call the server answered is counted once: the agent's turns and the judge's calls.
    assert _answered_calls(workdir, summary["id"]) == served
    assert summary["tokens"]["total"] > 0


def test_corpus_task(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="real", validator="real")
    before = llama.answered()
    summary, _done, elapsed = _run(
        workdir,
        config,
        "--corpus",
        str(workdir / "corpus"),
        "How high is Mount Everest? Search the documents.",
    )
    validation = _check_task(workdir, llama, "corpus", summary, elapsed, _served(llama, before))
    if validation is not None:
        _verdict, _debug, prompt = validation
        results = _rows(
            workdir,
            "SELECT content FROM events WHERE task_id = ? AND kind = 'tool_result_recorded'",
            summary["id"],
        )
        for (content,) in results:  # whatever the tools returned, the judge read
            if content and "8,849" in content:
                assert "8,849" in prompt


def test_output_schema_task(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="real", validator="real")
    schema = workdir / "schema.json"
    schema.write_text(
        json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    )
    before = llama.answered()
    summary, _done, elapsed = _run(
        workdir, config, "--output-schema", str(schema), "Which city is the capital of Italy? Reply as JSON."
    )
    served = _served(llama, before)
    _check_task(workdir, llama, "output schema", summary, elapsed, served)
    # The agent's turns, the schema's re-asks or repair, and the judge's calls: each counted once.
    assert _answered_calls(workdir, summary["id"]) == served
    failures = _rows(
        workdir,
        "SELECT COUNT(*) FROM events WHERE task_id = ? AND kind = 'output_schema_validation_failed'",
        summary["id"],
    )[0][0]
    final = _rows(workdir, "SELECT final_output FROM attempts WHERE task_id = ?", summary["id"])[0][0] or ""
    try:
        parsed = json.loads(final)
    except ValueError:
        parsed = None
    if summary["status"] == "awaiting_feedback":  # endorsed only when the answer matches the schema
        assert isinstance(parsed, dict) and isinstance(parsed.get("city"), str), (final, failures)


def test_team_task(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="real", validator="real")
    team = workdir / "team.json"
    team.write_text(
        json.dumps(
            {
                "mode": "parallel",
                "nodes": [
                    {"id": "geo", "role": "Geographer", "task": "Name the capital of Spain"},
                    {
                        "id": "hist",
                        "role": "Historian",
                        "task": "Say since when Madrid is the capital of Spain",
                    },
                ],
            }
        )
    )
    before = llama.answered()
    summary, _done, elapsed = _run(workdir, config, "--team", str(team), "What is the capital of Spain?")
    served = _served(llama, before)
    _check_task(workdir, llama, "team", summary, elapsed, served)
    assert _answered_calls(workdir, summary["id"]) == served  # nodes, node verdicts, synthesis, judge
    nodes = _rows(
        workdir,
        "SELECT COUNT(*) FROM runs WHERE session_id IN (SELECT id FROM sessions WHERE task_id = ?)",
        summary["id"],
    )[0][0]
    assert nodes >= 3  # two nodes and the synthesis ran against the real server


def test_scripted_agent_real_validator(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="scripted/agent", validator="real")
    before = llama.answered()
    summary, _done, elapsed = _run(
        workdir, config, "--corpus", str(workdir / "corpus"), "How high is Mount Everest?"
    )
    served = _served(llama, before)
    validation = _check_task(workdir, llama, "scripted agent + real validator", summary, elapsed, served)
    assert validation is not None
    _verdict, debug, prompt = validation
    # The evidence the scripted agent gathered from the real corpus is in the real judge's prompt.
    assert "8,849 metres above sea level (2020 survey)" in prompt
    assert debug["structured_contract"] == "json_object"
    assert served == int(debug["llm_calls"])  # only the judge called the server, every call counted


def test_real_agent_scripted_validator(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="real", validator="scripted/validator")
    before = llama.answered()
    summary, _done, elapsed = _run(workdir, config, "How many high tides does a coast see a day?")
    served = _served(llama, before)
    _check_task(workdir, llama, "real agent + scripted validator", summary, elapsed, served)
    verdict = _validation(workdir, summary["id"])
    assert verdict is not None and verdict[0] == "rejected"
    assert summary["status"] == "needs_review"  # rejected on the last attempt, an answer exists
    responses = _rows(
        workdir,
        "SELECT COUNT(*) FROM events WHERE task_id = ? AND kind = 'llm_response_received'",
        summary["id"],
    )[0][0]
    assert responses == served  # the agent's answered calls, each counted once


def test_server_killed_mid_run_and_restarted(llama: LlamaServer, workdir: Path) -> None:
    config = _config(workdir, llama, agent="real", validator="real")
    argv, env = _cli(workdir, config, "run", "--json", "Write three sentences about the Moon and the tides.")
    started = time.monotonic()
    child = zygote.spawn(argv, env, stdout=zygote.PIPE, stderr=zygote.PIPE)
    try:
        # The first request is in the server's hands once the run recorded its snapshot.
        deadline = time.monotonic() + RUN_LIMIT_S
        while time.monotonic() < deadline and child.poll() is None:
            if _snapshots(workdir):
                break
            time.sleep(0.1)  # another process's database: nothing to await but its rows
        llama.kill()  # a real SIGKILL while the request is being served
        llama.start()  # the same port again; the run's retries reach it
        out_bytes, err_bytes = child.communicate(timeout=RUN_LIMIT_S)
        out, err = (out_bytes or b"").decode(errors="replace"), (err_bytes or b"").decode(errors="replace")
    finally:
        if child.poll() is None:
            child.kill()
    elapsed = time.monotonic() - started
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    assert child.returncode in (0, 5), err[-3000:]
    summary = json.loads(out)
    _check_task(workdir, llama, "server SIGKILLed mid-run, restarted", summary, elapsed, 0)
    failed = _rows(
        workdir, "SELECT payload FROM events WHERE task_id = ? AND kind = 'llm_call_failed'", summary["id"]
    )
    if summary["status"] == "failed":  # the retries ran out before the server was back: said so
        assert "cannot reach the provider" in (summary.get("error") or "") or failed
    # The server is back and serves the next task on the same workspace.
    again, _done, elapsed = _run(workdir, config, "What is the capital of France?")
    _check_task(workdir, llama, "after the restart", again, elapsed, 0)
    assert again["status"] in RESTING
