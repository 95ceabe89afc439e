"""Task and attempt token/cost totals, as ``show`` (JSON and text) and the report state them."""

from __future__ import annotations

from tests.integration.conftest import Desk, verdict

SEARCH = {
    "tool_calls": [{"name": "search_corpus", "arguments": {"query": "tides moon"}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 10},
}


def test_show_and_report_carry_task_and_attempt_totals(desk: Desk) -> None:
    desk.script(
        [
            {
                "model": "agent",
                "turns": [
                    SEARCH,
                    {
                        "content": "Tides come from the Moon.",
                        "usage": {"prompt_tokens": 200, "completion_tokens": 20},
                    },
                ],
            },
            {
                "model": "validator",
                "turns": [
                    {
                        "content": verdict("accepted", 0.9),
                        "usage": {"prompt_tokens": 1000, "completion_tokens": 50},
                    }
                ],
            },
        ]
    )
    task = desk.cli_json("run", "What causes tides?")
    shown = desk.cli_json("show", task["id"])
    agent_and_validator = {
        "calls": 3,
        "prompt_tokens": 1300,
        "completion_tokens": 80,
        "cost_usd": 0.0,
        "unpriced_calls": 0,
    }
    assert shown["usage"] == agent_and_validator
    assert [a["usage"] for a in shown["attempts"]] == [agent_and_validator]

    code, text, _ = desk.cli("show", task["id"])
    assert code == 0
    assert text.count("usage 1,380 tokens (1,300 in, 80 out) · $0.0000") == 2  # task line, attempt line

    report = desk.root / "report.html"
    assert desk.cli("report", task["id"], "-o", str(report))[0] == 0
    html = report.read_text(encoding="utf-8")
    assert "Model usage: 1,380 tokens (1,300 in, 80 out) · $0.0000 over 3 call(s)" in html
    assert '<span class="attempt-usage">1,380 tokens (1,300 in, 80 out) · $0.0000</span>' in html
