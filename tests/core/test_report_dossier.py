"""The audit report and ``show`` are built from the same dossier, so they state the same facts per attempt."""

from __future__ import annotations

import json
import re
from pathlib import Path

from core.bundle import export_bundle, open_bundle, write_report, write_report_from_bundle
from core.tasks.dossier_json import task_dossier
from core.tasks.service import TaskService
from core.workspace import Workspace
from tests.core.conftest import ScriptFactory


def verdict(status: str) -> str:
    return json.dumps(
        {"goal_achievement": "g", "completeness": "c", "rule_compliance": "r", "status": status, "score": 0.5}
    )


async def test_report_and_show_state_the_same_outcome_per_attempt(
    make_settings: ScriptFactory, db_url: str, tmp_path: Path
) -> None:
    settings = make_settings(
        [
            {"model": "agent", "turns": [{"content": "first"}, {"content": "second"}]},
            {
                "model": "validator",
                "turns": [{"content": verdict(s)} for s in ("rejected", "insufficient_evidence")],
            },
        ],
        db_url=db_url,
        max_validation_attempts=2,
    )
    ws = await Workspace.open(settings)
    service = TaskService(ws)
    task = await service.run((await service.create("A question?")).id)
    shown = await task_dossier(ws.store, task.id)  # what ``show --json`` prints
    in_show = {a["index"]: (a["state"], a["validation_outcome"] or "none") for a in shown["attempts"]}
    assert in_show == {1: ("finished", "none"), 2: ("finished", "force_accepted")}

    html = (await write_report(ws.store, task.id, tmp_path / "report.html")).read_text(encoding="utf-8")
    assert report_facts(html) == in_show
    # The page names the outcome as show and the desk do; the stored value is only its tooltip.
    assert report_labels(html) == {1: "none", 2: "not endorsed: rejected"}
    assert '<strong title="recorded as force_accepted">not endorsed: rejected</strong>' in html
    assert ">force_accepted<" not in html
    bundle = tmp_path / "case.zip"
    await export_bundle(ws.store, [task.id], bundle, environ={})
    opened = open_bundle(bundle)
    from_bundle = await write_report_from_bundle(opened, task.id, tmp_path / "bundle.html")
    assert report_facts(from_bundle.read_text(encoding="utf-8")) == in_show
    # The bundle's view is the same read model the desk shows for a workspace task.
    assert opened.dossier(task.id).attempts == [
        a.model_copy() for a in (await ws.store.list_attempts(task.id))
    ]
    await ws.close()


_ATTEMPT_FACTS = re.compile(
    r"<h2>Attempt (\d+)[^<]*</h2>\s*<p class=\"meta\">.*?<span class=\"attempt-state\">([^<]*)</span>.*?"
    r"<span class=\"attempt-outcome\"(?: title=\"recorded as ([^\"]*)\")?>([^<]*)</span>",
    re.S,
)


def report_facts(html: str) -> dict[int, tuple[str, str]]:
    """Per attempt: the recorded state and outcome value the audit page carries."""
    return {int(i): (state, value or "none") for i, state, value, _ in _ATTEMPT_FACTS.findall(html)}


def report_labels(html: str) -> dict[int, str]:
    """Per attempt: the outcome words the audit page prints."""
    return {int(i): shown for i, _, _, shown in _ATTEMPT_FACTS.findall(html)}
