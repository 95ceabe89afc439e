"""Attempt diff: a known pair of attempts gives the expected words, issues, citations and evidence."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from core.domain import TaskEvidencePacket
from core.domain.content import ContentPolicy
from core.domain.evidence import RunEvidence, ToolEvidence
from core.domain.records import AttemptRecord, EventRecord
from core.store import Store
from core.tasks.diff import diff_attempts, format_diff, load_attempt_diff
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


class ReadMeter:
    """The store, with the characters of every record its readers hand back counted (counters only)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.chars = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def read(*args: Any, **kwargs: Any) -> Any:
            out = await attr(*args, **kwargs)
            for record in out if isinstance(out, list) else [out]:
                if isinstance(record, AttemptRecord):
                    self.chars += len(json.dumps(record.packet)) + len(record.final_output or "")
                elif isinstance(record, EventRecord):
                    self.chars += len(record.content or "") + len(json.dumps(record.payload))
                elif isinstance(record, str):
                    self.chars += len(record)
            return out

        return read


async def seed_big_pair(store: Store, size: int) -> str:
    """Two attempts: a big result the same in both, a big result rewritten, a mid-sized one the same.

    The first attempt is stored with an inline limit above the mid-sized text (inline there), the
    second with a small one (a chunk reference there), as when a workspace's policy changes.
    """
    same, old, new, mid = ("s" * size), ("o" * size), ("n" * size), "m" * 1000
    task = await store.create_task("big")
    one = await store.create_attempt(task.id, 1, trigger="initial", prompt="big")
    two = await store.create_attempt(task.id, 2, trigger="retry", prompt="big")
    store.content_policy = ContentPolicy(inline_limit=2000, chunk_chars=size // 3)
    results = [("read", same), ("search", old), ("note", mid)]
    await store.update_attempt(one.id, final_output="a", packet=packet(task.id, 1, 1, results, "a"))
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=size // 3)
    results = [("note", mid), ("search", new), ("read", same)]
    await store.update_attempt(two.id, final_output="b", packet=packet(task.id, 2, 4, results, "b"))
    return task.id


async def test_big_attempts_diff_by_hashes_without_reading_their_evidence(store: Store) -> None:
    task_id = await seed_big_pair(store, 300_000)
    meter = ReadMeter(store)
    d = await load_attempt_diff(meter, task_id)  # type: ignore[arg-type]
    assert d.evidence_unchanged == 2  # the mid-sized text: inline in A, stored in B
    assert [(e.change, e.a_id, e.b_id) for e in d.evidence] == [("changed", "E2", "E5")]
    assert meter.chars < 20_000  # what the diff held of the task: no evidence text (1.2M characters)


async def test_an_indexed_dossier_does_not_take_two_stored_texts_for_the_same(store: Store) -> None:
    """Read as an index, both texts are blank with a reference: the diff must compare the hashes."""
    task_id = await seed_big_pair(store, 3_000)
    store.content_policy = ContentPolicy(inline_limit=64, chunk_chars=1000)
    task = await store.create_task("both stored")
    one = await store.create_attempt(task.id, 1, trigger="initial", prompt="p")
    two = await store.create_attempt(task.id, 2, trigger="retry", prompt="p")
    await store.update_attempt(one.id, packet=packet(task.id, 1, 1, [("search", "x" * 500)], "a"))
    await store.update_attempt(two.id, packet=packet(task.id, 2, 2, [("search", "y" * 500)], "b"))
    d = diff_attempts(await load_dossier(store, task.id, resolve=False))
    assert d.evidence_unchanged == 0 and [e.change for e in d.evidence] == ["changed"]
    assert (await load_attempt_diff(store, task_id)).evidence_unchanged == 2
