"""The demo workspace is produced by the real pipeline and holds every interesting state."""

from __future__ import annotations

from tests.integration.conftest import Desk


def test_demo_workspace_has_every_state(desk: Desk) -> None:
    desk.script([{"model": "unused", "turns": [{"content": "the demo brings its own script"}]}])
    code, _, err = desk.cli("demo", "--json")
    assert code == 0, err
    demo = str(desk.root / "demo.sqlite3")  # its own workspace, beside the analyst's
    dossiers = {
        t["title"]: desk.cli_json("show", t["id"], "--db", demo) for t in desk.cli_json("list", "--db", demo)
    }

    def attempts(title: str) -> list[tuple[str, str | None]]:
        return [(a["finish_reason"], a["validation_status"]) for a in dossiers[title]["attempts"]]

    def status(title: str) -> tuple[str, str | None]:
        task = dossiers[title]["task"]
        return task["status"], task["validation_outcome"]

    assert status("Tides") == ("awaiting_feedback", "accepted") and attempts("Tides") == [
        ("stop", "accepted")
    ]
    assert attempts("Speed of light") == [("stop", "rejected"), ("stop", "accepted")]
    assert status("Speed of light") == ("awaiting_feedback", "accepted")
    assert status("Sirena Deep") == ("needs_review", "force_accepted")
    assert attempts("Sirena Deep") == [("stop", "insufficient_evidence")]
    assert attempts("Great Wall length") == [("stop", "validator_error")]
    schema_failures = [
        e for e in dossiers["Great Wall length"]["events"] if e["kind"] == "output_schema_validation_failed"
    ]
    assert len(schema_failures) >= 2
    assert attempts("Boiling point on Everest") == [("max_tool_iterations_finalized", "accepted")]
    nodes = dossiers["Venus and bees briefing"]["attempts"][0]["packet"]["team_node_results"]
    assert [(n["node_id"], n["status"]) for n in nodes] == [("venus", "succeeded"), ("bees", "failed")]
    assert status("Rosetta Stone")[0] == "closed"
    assert status("Antikythera mechanism")[0] == "abandoned"
    # Produced by the pipeline: every task has run events and a validation debug snapshot.
    for title, dossier in dossiers.items():
        kinds = {e["kind"] for e in dossier["events"]}
        assert {"run_started", "run_finished", "task_validation_snapshotted"} <= kinds, title
