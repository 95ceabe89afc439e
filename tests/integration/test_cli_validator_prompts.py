"""The workspace's own validator templates: versioned, diffable, used by the next verdict, and a
new validator version that calibration groups by."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import Desk, verdict

RUBRIC = "validation_rubric.md.j2"


def _script(desk: Desk) -> None:
    desk.script(
        [
            {"model": "agent", "turns": [{"content": "Tides come from the Moon's gravity."}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )


def _decide_one(desk: Desk, text: str) -> str:
    task = desk.cli_json("run", text)
    code, _, err = desk.cli("feedback", task["id"], "satisfied")
    assert code == 0, err
    return str(task["id"])


def test_a_template_edit_makes_a_new_validator_version_that_calibration_groups_by(
    desk: Desk, tmp_path: Path
) -> None:
    _script(desk)
    first = _decide_one(desk, "What causes tides?")
    v1 = desk.cli_json("validator-prompt", "list")["validator_version"]
    stricter = tmp_path / "rubric.md.j2"
    stricter.write_text("WORKSPACE RUBRIC: every date needs a source.\n", encoding="utf-8")
    saved = desk.cli_json("validator-prompt", "edit", RUBRIC, "--file", str(stricter), "--note", "dates")
    assert saved["version"] == 1 and saved["validator_version"] != v1
    v2 = saved["validator_version"]
    second = _decide_one(desk, "What causes tides, again?")

    rows = desk.rows("select task_id, debug from validations")
    by_task = {t: json.loads(d)["validator_version"] for t, d in rows}
    assert by_task == {first: v1, second: v2}
    cal = desk.cli_json("calibration")
    assert {k: v["n"] for k, v in cal["by_version"].items()} == {v1: 1, v2: 1}
    only = desk.cli_json("calibration", "--validator-version", v2)
    assert only["n"] == 1

    code, out, _ = desk.cli("validator-prompt", "diff", RUBRIC)
    assert code == 0 and "+WORKSPACE RUBRIC: every date needs a source." in out and "(installed)" in out
    code, out, _ = desk.cli("validator-prompt", "show", RUBRIC)
    assert out == "WORKSPACE RUBRIC: every date needs a source.\n"
    code, out, _ = desk.cli("validator-prompt", "show", RUBRIC, "--installed")
    assert "WORKSPACE RUBRIC" not in out and out.strip()
    listed = desk.cli_json("validator-prompt", "list")
    assert {r["name"]: r["source"] for r in listed["templates"]}[RUBRIC] == "workspace"
    back = desk.cli_json("validator-prompt", "edit", RUBRIC, "--reset")
    assert back["version"] == 2 and back["validator_version"] == v1  # the installed judge again


def test_a_bad_template_is_refused_and_nothing_is_saved(desk: Desk, tmp_path: Path) -> None:
    _script(desk)
    assert desk.cli("list")[0] == 0
    before = desk.dump()
    broken = tmp_path / "broken.md.j2"
    broken.write_text("{% if status %}unclosed", encoding="utf-8")
    code, _, err = desk.cli("validator-prompt", "edit", RUBRIC, "--file", str(broken))
    assert code == 4 and "not a valid template" in err and err.count("\n") == 1
    code, _, err = desk.cli("validator-prompt", "edit", "nope.md.j2", "--file", str(broken))
    assert code == 4 and "no validator template 'nope.md.j2'" in err
    code, _, err = desk.cli("validator-prompt", "edit", RUBRIC, "--reset")
    assert code == 4 and "unchanged" in err
    code, _, err = desk.cli("validator-prompt", "show", RUBRIC, "--version", "3")
    assert code == 4 and "no version 3" in err
    assert desk.dump() == before
