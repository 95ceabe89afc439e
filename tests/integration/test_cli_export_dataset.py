"""export-dataset: one record per decided task, in our JSONL, Inspect's and promptfoo's shapes; the
Inspect and promptfoo files checked against those formats' schemas (tests/schemas, transcribed from
each tool's own source); written whole or not at all; redacted like bundles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.integration.conftest import Desk, verdict

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
SECRET = "sk-ant-api03-" + "A" * 93 + "AA"


def _workspace(desk: Desk) -> dict[str, str]:
    """Three decided tasks: one satisfied, one abandoned, one revised and then accepted."""
    desk.script(
        [
            {
                "model": "agent",
                "match": "revise me",
                "turns": [{"content": "First try."}, {"content": "Better answer."}],
            },
            {"model": "agent", "turns": [{"content": f"Tides come from the Moon. key {SECRET}"}]},
            {"model": "validator", "turns": [{"content": verdict("accepted", 0.9)}]},
        ]
    )
    ids = {}
    for key, text in (
        ("ok", "What causes tides?"),
        ("bad", "What causes tides, badly?"),
        ("rev", "revise me"),
    ):
        ids[key] = desk.cli_json("run", text)["id"]
    assert desk.cli("feedback", ids["ok"], "satisfied")[0] == 0
    assert desk.cli("feedback", ids["bad"], "abandon")[0] == 0
    code, _, err = desk.cli("feedback", ids["rev"], "revise", "--prompt", "Say it better.")
    assert code == 0, err
    assert desk.cli("feedback", ids["rev"], "satisfied")[0] == 0
    desk.cli("list")  # settle
    return ids


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_dataset_formats_round_trip(desk: Desk, tmp_path: Path) -> None:
    ids = _workspace(desk)
    out = tmp_path / "set.jsonl"
    done = desk.cli_json("export-dataset", "--format", "jsonl", "-o", str(out))
    records = _lines(out)
    assert done["records"] == len(records) == 3
    by_id = {r["task_id"]: r for r in records}
    assert set(by_id) == set(ids.values())  # one record per decided task
    rev = by_id[ids["rev"]]
    assert rev["analyst"]["decision"] == "revise" and rev["answer"] == "First try."
    assert rev["corrected_answer"] == "Better answer."
    assert by_id[ids["ok"]]["corrected_answer"] is None and by_id[ids["bad"]]["analyst"]["endorsed"] is False
    assert by_id[ids["ok"]]["validator_verdicts"][0]["validator_version"]
    assert SECRET not in out.read_text(encoding="utf-8")  # masked like a bundle

    inspect_out = tmp_path / "inspect.jsonl"
    desk.cli_json("export-dataset", "--format", "inspect", "-o", str(inspect_out), "--inline")
    schema = json.loads((SCHEMAS / "inspect_sample.schema.json").read_text(encoding="utf-8"))
    samples = _lines(inspect_out)
    for sample in samples:
        jsonschema.validate(sample, schema)
    assert {s["id"]: s["target"] for s in samples} == {
        ids["ok"]: "accepted",
        ids["bad"]: "rejected",
        ids["rev"]: "rejected",
    }

    pf_out = tmp_path / "promptfoo.jsonl"
    desk.cli_json("export-dataset", "--format", "promptfoo", "-o", str(pf_out))
    schema = json.loads((SCHEMAS / "promptfoo_test_case.schema.json").read_text(encoding="utf-8"))
    cases = _lines(pf_out)
    for case in cases:
        jsonschema.validate(case, schema)
        assert all(v is not None for v in case["vars"].values())  # promptfoo refuses null vars
    assert len(cases) == 3

    only = tmp_path / "only.jsonl"
    assert desk.cli_json("export-dataset", "-o", str(only), "--decision", "abandon")["records"] == 1


def test_a_failed_export_leaves_no_file_and_keeps_the_old_one(desk: Desk, tmp_path: Path) -> None:
    _workspace(desk)
    out = tmp_path / "set.jsonl"
    out.write_text("old\n", encoding="utf-8")
    code, _, _ = desk.cli("export-dataset", "-o", str(out), "--task", "ffffffffff")
    assert code == 4 and out.read_text(encoding="utf-8") == "old\n"
    code, _, _ = desk.cli("export-dataset", "-o", str(tmp_path / "x.jsonl"), "--redact", "([")
    assert code == 4 and not (tmp_path / "x.jsonl").exists()
    assert not list(tmp_path.glob(".*.part"))


@pytest.mark.parametrize(
    "bad", [{"assert": [{"type": "no-such-check"}]}, {"vars": {"x": None}}, {"bogus": 1}]
)
def test_the_promptfoo_schema_refuses_what_promptfoo_would(bad: dict[str, Any]) -> None:
    schema = json.loads((SCHEMAS / "promptfoo_test_case.schema.json").read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
