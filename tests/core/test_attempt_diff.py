"""Attempt diff: a known pair of attempts gives the expected words, issues, citations and evidence."""

from __future__ import annotations

from typing import Any

import pytest

from core.domain import TaskEvidencePacket
from core.domain.evidence import RunEvidence, ToolEvidence
from core.store import Store
from core.tasks.diff import diff_attempts, format_diff
from core.tasks.dossier import load_dossier


def packet(
    task_id: str, index: int, start: int, results: list[tuple[str, str]], answer: str
) -> dict[str, Any]:
    run = RunEvidence(
        run_id=f"r{index}",
        session_id="s",
        output_text=answer,
        tool_results=[ToolEvidence(tool_name=name, content=content) for name, content in results],
    )
    p = TaskEvidencePacket(
        task_id=task_id, attempt_index=index, main_run=run, final_output=answer, evidence_id_start=start
    )
    return p.model_dump(mode="json")


def cite(claim: str, eid: str, verdict: str, check: str) -> dict[str, str]:
    return {"claim": claim, "evidence_id": eid, "quote": "q", "verdict": verdict, "check": check}


async def seed_pair(store: Store) -> str:
    task = await store.create_task("How high is Everest?")
    one = await store.create_attempt(task.id, 1, trigger="initial", prompt="How high is Everest?")
    two = await store.create_attempt(task.id, 2, trigger="revision", prompt="Cite the 2020 survey.")
    a1 = "Everest is 8,848 m tall according to old surveys"
    a2 = "Everest is 8,849 m tall according to the 2020 survey"
    await store.update_attempt(
        one.id,
        final_output=a1,
        packet=packet(task.id, 1, 1, [("search", "old survey 8,848"), ("read", "same page")], a1),
    )
    await store.update_attempt(
        two.id,
        final_output=a2,
        packet=packet(
            task.id, 2, 4, [("read", "same page"), ("search", "2020 survey 8,849"), ("fetch", "new")], a2
        ),
    )
    for attempt, status, issues, cites in (
        (
            one,
            "rejected",
            ["uses an outdated figure", "no source"],
            [cite("height", "E1", "supported", "verified")],
        ),
        (two, "accepted", ["no source"], [cite("height", "E1", "supported", "quote_not_found")]),
    ):
        await store.add_validation(
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=attempt.index,
            result={
                "status": status,
                "score": 0.9 if status == "accepted" else 0.3,
                "issues": issues,
                "citations": cites,
            },
            raw_response="{}",
            prompt=None,
            debug={},
        )
    return task.id


async def test_known_pair(store: Store) -> None:
    dossier = await load_dossier(store, await seed_pair(store))
    d = diff_attempts(dossier)  # the last two by default
    assert (d.a, d.b) == (1, 2)
    assert d.words_removed == ["8,848", "old", "surveys"]
    assert d.words_added == ["8,849", "the", "2020", "survey"]
    fields = {f.name: (f.a, f.b) for f in d.verdict.fields}
    assert fields["status"] == ("rejected", "accepted") and fields["score"] == (0.3, 0.9)
    assert d.verdict.issues_removed == ["uses an outdated figure"] and d.verdict.issues_added == []
    (c,) = d.verdict.citations_changed
    assert (c.evidence_id, c.a, c.b) == ("E1", "supported/verified", "supported/quote_not_found")
    changes = {(e.change, e.a_id, e.b_id) for e in d.evidence}
    assert d.evidence_unchanged == 1  # "read: same page" is the same evidence under a new id
    assert ("changed", "E1", "E5") in changes and ("added", None, "E6") in changes
    assert d.revision_prompt == "Cite the 2020 survey."
    text = format_diff(d)
    assert "[-8,848-] {+8,849+}" in text and "- issue: uses an outdated figure" in text


async def test_bad_attempt_numbers(store: Store) -> None:
    dossier = await load_dossier(store, await seed_pair(store))
    with pytest.raises(ValueError, match="has no attempt 7"):
        diff_attempts(dossier, 1, 7)
