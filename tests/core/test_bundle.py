"""Case bundles: round trip, tamper detection, refusal of corrupt bundles, redaction."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from core.bundle import (
    BundleError,
    export_bundle,
    import_bundle,
    open_bundle,
    verify_bundle,
)
from core.bundle.format import MANIFEST_NAME, canonical, events_entry, sha256_hex, task_entry
from core.domain.evidence import RunEvidence, TaskEvidencePacket, ToolEvidence
from core.domain.status import FeedbackAction, TaskStatus
from core.store import NewEvent, Store
from core.store.models import EventRow, SessionRow, TaskRow, utcnow

SECRET_CODENAME = "NIGHTJAR-7731"
FAKE_KEY = "sk-test0123456789abcdefABCDEF"


async def make_case(
    store: Store, *, evidence: str | None = None, answer: str | None = None, with_key: bool = False
) -> str:
    """A task shaped like a real run: main session, a team-node session, attempt, packet, validation, feedback."""
    task = await store.create_task(
        f"How deep is the Mariana Trench? (project {SECRET_CODENAME})", title="Mariana Trench depth"
    )
    assert task.main_session_id is not None  # created with the task
    main = next(s for s in await store.list_sessions(task.id) if s.id == task.main_session_id)
    node = await store.create_session(
        task_id=None, kind="node", label="researcher", parent_session_id=main.id
    )
    await store.create_session(task_id=task.id, kind="main", label="empty")
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    run = await store.create_run(
        session_id=main.id, kind="agent", model="scripted/agent", task_id=task.id, attempt_id=attempt.id
    )
    node_run = await store.create_run(
        session_id=node.id,
        kind="node",
        model="scripted/agent",
        task_id=task.id,
        attempt_id=attempt.id,
        node_id="r1",
    )
    doc = evidence or "The Challenger Deep reaches about 10,935 m below sea level — «Tiefe» ✓."
    await store.append_events(
        main.id,
        [
            NewEvent(kind="run_started", payload={"model": "scripted/agent", "n": 1, "f": 0.1}),
            NewEvent(kind="llm_request_snapshotted", payload={"messages": 2, "tools": ["search_documents"]}),
            NewEvent(
                kind="tool_call_started",
                payload={
                    "name": "search_documents",
                    "arguments": {"query": "Mariana depth"},
                    "auth": FAKE_KEY if with_key else "none",
                },
            ),
            NewEvent(
                kind="tool_result_recorded", payload={"tool_call_id": "c1", "is_error": False}, content=doc
            ),
            NewEvent(kind="llm_response_received", payload={"finish_reason": "stop"}, content=None),
            NewEvent(kind="run_finished", payload={"finish_reason": "stop", "codename": SECRET_CODENAME}),
        ],
        run_id=run.id,
        task_id=task.id,
    )
    await store.append_events(
        node.id,
        [
            NewEvent(kind="run_started", payload={}),
            NewEvent(kind="run_finished", payload={}, content="node out"),
        ],
        run_id=node_run.id,
        task_id=task.id,
    )
    final = answer or "The deepest point, the Challenger Deep, is about 10,935 m deep [E1]."
    packet = TaskEvidencePacket(
        task_id=task.id,
        attempt_index=1,
        main_run=RunEvidence(
            run_id=run.id,
            session_id=main.id,
            output_text=final,
            tool_results=[
                ToolEvidence(
                    tool_name="search_documents", tool_call_id="c1", content=doc, title="Mariana Trench"
                )
            ],
        ),
        final_output=final,
    )
    await store.finish_run(run.id, finish_reason="stop", output_text=final)
    await store.update_attempt(
        attempt.id,
        state="finished",
        final_output=final,
        packet=packet.model_dump(mode="json"),
        validation_status="accepted",
        validation_score=0.9,
        validation_outcome="accepted",
        finished_at=utcnow(),
    )
    result = {
        "status": "accepted",
        "score": 0.9,
        "category": "none",
        "issues": ["minor: rounding"],
        "citations": [
            {
                "claim": "about 10,935 m",
                "evidence_id": "E1",
                "quote": "reaches about 10,935 m below sea level",
                "verdict": "supported",
                "check": "verified",
            }
        ],
    }
    await store.add_validation(
        task_id=task.id,
        attempt_id=attempt.id,
        attempt_index=1,
        result=result,
        raw_response=json.dumps(result),
        prompt="VALIDATOR PROMPT with evidence [E1] ...",
        debug={"chunks": 1},
    )
    await store.update_task(
        task.id,
        status=TaskStatus.AWAITING_FEEDBACK,
        main_session_id=main.id,
        attempt_count=1,
        validation_outcome="accepted",
    )
    await store.add_feedback(
        task_id=task.id,
        attempt_id=attempt.id,
        action=FeedbackAction.SATISFIED.value,
        prompt=None,
        note="Checked against NOAA figures.",
        reviewer="ana",
        from_status=TaskStatus.AWAITING_FEEDBACK,
        to_status=TaskStatus.CLOSED,
    )
    return task.id


@pytest.fixture
async def other_store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'other.sqlite3'}")
    yield s
    await s.close()


def read_entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def rewrite(path: Path, out: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """Re-zip a bundle after ``change`` edits its entries: what a careless or hostile editor would do."""
    entries = read_entries(path)
    change(entries)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in entries.items():
            zf.writestr(name, blob)
    return out


def fix_manifest_hash(entries: dict[str, bytes], name: str) -> None:
    """A smarter attacker also updates the entry's hash in the manifest; the chain must still catch it."""
    manifest = json.loads(entries[MANIFEST_NAME])
    manifest["entries"][name] = {"sha256": sha256_hex(entries[name]), "size": len(entries[name])}
    entries[MANIFEST_NAME] = (canonical(manifest) + "\n").encode()


async def main_session(store: Store, task_id: str) -> str:
    task = await store.get_task(task_id)
    assert task.main_session_id is not None
    return task.main_session_id


def _event_view(e: Any) -> tuple[Any, ...]:
    return (e.session_id, e.run_id, e.task_id, e.seq, e.kind, e.payload, e.content, e.created_at)


async def test_round_trip_keeps_every_event_byte_for_byte(
    store: Store, other_store: Store, tmp_path: Path
) -> None:
    task_id = await make_case(store)
    bundle = tmp_path / "case.zip"
    summary = await export_bundle(store, [task_id[:8]], bundle, environ={})
    assert summary.task_ids == [task_id]
    assert summary.events == 8

    report = verify_bundle(bundle)
    assert report.ok, report.failures
    assert report.events_checked == 8

    imported = await import_bundle(other_store, bundle, trust=True)
    assert imported.imported_task_ids == [task_id]
    assert imported.events == 8

    sessions = await store.list_sessions(task_id)
    node_sessions = {r.session_id for r in await store.list_runs(task_id=task_id)}
    for sid in {s.id for s in sessions} | node_sessions:
        before = [_event_view(e) for e in await store.get_session_events(sid)]
        after = [_event_view(e) for e in await other_store.get_session_events(sid)]
        assert before == after

    copy = await other_store.get_task(task_id)
    original = await store.get_task(task_id)
    assert copy.read_only and copy.origin == f"bundle:{summary.bundle_id}"
    assert copy.model_copy(update={"read_only": False, "origin": None}) == original
    assert await other_store.list_attempts(task_id) == await store.list_attempts(task_id)
    assert await other_store.list_validations(task_id) == await store.list_validations(task_id)
    assert await other_store.list_feedback(task_id) == await store.list_feedback(task_id)
    assert await other_store.list_runs(task_id=task_id) == await store.list_runs(task_id=task_id)

    # Re-exporting the imported copy reproduces the event logs to the byte, hash chains included.
    again = tmp_path / "again.zip"
    await export_bundle(other_store, [task_id], again, environ={})
    first, second = read_entries(bundle), read_entries(again)
    logs = [n for n in first if n.endswith("events.jsonl")]
    assert len(logs) == 3
    for name in logs:
        assert first[name] == second[name]

    # New events in an imported session continue the sequence instead of colliding.
    sid = await main_session(other_store, task_id)
    ev = await other_store.append_event(sid, "note", {})
    assert ev.seq == 7


async def test_importing_twice_does_not_duplicate(store: Store, other_store: Store, tmp_path: Path) -> None:
    task_id = await make_case(store)
    bundle = tmp_path / "case.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    await import_bundle(other_store, bundle, trust=True)
    second = await import_bundle(other_store, bundle, trust=True)
    assert second.imported_task_ids == [] and second.skipped_task_ids == [task_id]
    async with other_store.engine.connect() as conn:
        assert await conn.scalar(select(func.count()).select_from(TaskRow)) == 1
        assert await conn.scalar(select(func.count()).select_from(EventRow)) == 8


@pytest.fixture
async def exported(store: Store, tmp_path: Path) -> tuple[Path, str, str]:
    task_id = await make_case(store)
    bundle = tmp_path / "case.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    return bundle, task_id, await main_session(store, task_id)


def _lines(blob: bytes) -> list[bytes]:
    return blob.splitlines(keepends=True)


@pytest.mark.parametrize("fix_manifest", [False, True])
async def test_changed_byte_in_an_event_is_named(
    exported: tuple[Path, str, str], tmp_path: Path, fix_manifest: bool
) -> None:
    bundle, _, sid = exported
    name = events_entry(sid)

    def change(entries: dict[str, bytes]) -> None:
        entries[name] = entries[name].replace(b"10,935", b"10,936", 1)
        if fix_manifest:
            fix_manifest_hash(entries, name)

    report = verify_bundle(rewrite(bundle, tmp_path / "bad.zip", change))
    assert not report.ok
    assert any(f.startswith(f"{name}: event seq 4") and "hash mismatch" in f for f in report.failures), (
        report.failures
    )
    assert any("sha256 mismatch" in f for f in report.failures) is (not fix_manifest)


@pytest.mark.parametrize("fix_manifest", [False, True])
async def test_deleted_event_is_named(
    exported: tuple[Path, str, str], tmp_path: Path, fix_manifest: bool
) -> None:
    bundle, _, sid = exported
    name = events_entry(sid)

    def change(entries: dict[str, bytes]) -> None:
        lines = _lines(entries[name])
        del lines[2]
        entries[name] = b"".join(lines)
        if fix_manifest:
            fix_manifest_hash(entries, name)

    report = verify_bundle(rewrite(bundle, tmp_path / "bad.zip", change))
    assert not report.ok
    assert f"{name}: event seq 3 missing before line 3 (deleted)" in report.failures, report.failures


async def test_deleting_the_last_event_is_caught_by_the_manifest(
    exported: tuple[Path, str, str], tmp_path: Path
) -> None:
    bundle, _, sid = exported
    name = events_entry(sid)

    def change(entries: dict[str, bytes]) -> None:
        entries[name] = b"".join(_lines(entries[name])[:-1])
        fix_manifest_hash(entries, name)

    report = verify_bundle(rewrite(bundle, tmp_path / "bad.zip", change))
    assert any(f.startswith(name) and "chain head" in f for f in report.failures), report.failures


async def test_swapped_events_are_named(exported: tuple[Path, str, str], tmp_path: Path) -> None:
    bundle, _, sid = exported
    name = events_entry(sid)

    def change(entries: dict[str, bytes]) -> None:
        lines = _lines(entries[name])
        lines[1], lines[2] = lines[2], lines[1]
        entries[name] = b"".join(lines)
        fix_manifest_hash(entries, name)

    report = verify_bundle(rewrite(bundle, tmp_path / "bad.zip", change))
    assert not report.ok
    assert any(f.startswith(f"{name}: event seq 2") and "out of order" in f for f in report.failures), (
        report.failures
    )
    assert any(f.startswith(f"{name}: event seq 3") and "chain broken" in f for f in report.failures)


async def test_changed_task_file_and_removed_entry_are_named(
    exported: tuple[Path, str, str], tmp_path: Path
) -> None:
    bundle, task_id, _ = exported
    task_json = task_entry(task_id, "task.json")
    feedback_json = task_entry(task_id, "feedback.json")

    def change(entries: dict[str, bytes]) -> None:
        entries[task_json] = entries[task_json].replace(b"awaiting_feedback", b"closed")
        del entries[feedback_json]
        entries["extra.txt"] = b"hello"

    report = verify_bundle(rewrite(bundle, tmp_path / "bad.zip", change))
    assert f"{task_json}: sha256 mismatch (content changed)" in report.failures
    assert f"manifest lists {feedback_json} but the bundle lacks it (entry removed)" in report.failures
    assert any(f.startswith("extra.txt: in the archive but not listed") for f in report.failures)


async def test_flipped_byte_in_the_file_fails_verification(exported: tuple[Path, str, str]) -> None:
    bundle, _, sid = exported
    raw = bytearray(bundle.read_bytes())
    with zipfile.ZipFile(bundle) as zf:
        info = zf.getinfo(events_entry(sid))
    # Flip a byte inside the compressed data of the event log (past its 30-byte local header and name).
    pos = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    raw[pos] ^= 0xFF
    bundle.write_bytes(bytes(raw))
    report = verify_bundle(bundle)
    assert not report.ok
    assert any(f.startswith(events_entry(sid)) for f in report.failures), report.failures


async def _count_all(store: Store) -> tuple[int, int, int]:
    async with store.engine.connect() as conn:
        return (
            int(await conn.scalar(select(func.count()).select_from(TaskRow)) or 0),
            int(await conn.scalar(select(func.count()).select_from(SessionRow)) or 0),
            int(await conn.scalar(select(func.count()).select_from(EventRow)) or 0),
        )


async def test_corrupt_or_truncated_bundles_are_refused_and_write_nothing(
    exported: tuple[Path, str, str], other_store: Store, tmp_path: Path
) -> None:
    bundle, _, sid = exported
    raw = bundle.read_bytes()
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(raw[: len(raw) // 2])
    not_zip = tmp_path / "notes.zip"
    not_zip.write_text("just some text", encoding="utf-8")
    tampered = rewrite(
        bundle,
        tmp_path / "tampered.zip",
        lambda e: e.__setitem__(
            events_entry(sid), e[events_entry(sid)].replace(b"run_started", b"run_startex")
        ),
    )
    for path, expected in (
        (truncated, "not a readable zip archive"),
        (not_zip, "not a readable zip archive"),
        (tampered, "hash mismatch"),
        (tmp_path / "missing.zip", "no such file"),
    ):
        with pytest.raises(BundleError, match="refusing to import") as err:
            await import_bundle(other_store, path, trust=True)
        assert expected in str(err.value)
        assert "Nothing was imported" in str(err.value)
    assert await _count_all(other_store) == (0, 0, 0)


async def test_a_failure_midway_rolls_everything_back(
    exported: tuple[Path, str, str], other_store: Store
) -> None:
    bundle, _, sid = exported
    # The target already holds a session with one of the bundle's ids (but not the task): the insert
    # of sessions fails after the task and attempt rows were sent.
    async with other_store.write_engine.begin() as conn:
        await conn.execute(
            insert(SessionRow), [{"id": sid, "task_id": None, "kind": "main", "label": "", "next_seq": 1}]
        )
    with pytest.raises(BundleError, match="Nothing was imported"):
        await import_bundle(other_store, bundle, trust=True)
    assert await _count_all(other_store) == (0, 1, 0)
    async with other_store.engine.connect() as conn:
        assert (
            await conn.scalar(select(func.count()).select_from(SessionRow).where(SessionRow.id == sid)) == 1
        )


async def test_redaction_leaves_no_match_anywhere(store: Store, other_store: Store, tmp_path: Path) -> None:
    task_id = await make_case(store, with_key=True)
    bundle = tmp_path / "redacted.zip"
    env = {"ACME_API_KEY": "acme-key-Zz99", "SHORT_TOKEN": "abc", "HOME": "/home/x"}
    await store.append_event(
        await main_session(store, task_id), "note", {"k": "acme-key-Zz99"}, content="acme-key-Zz99"
    )
    summary = await export_bundle(store, [task_id], bundle, redact=[r"NIGHTJAR-\d+"], environ=env)

    entries = read_entries(bundle)
    for name, blob in entries.items():
        text = blob.decode("utf-8")
        for needle in (r"NIGHTJAR-\d+", re.escape("acme-key-Zz99"), re.escape(FAKE_KEY)):
            assert re.search(needle, name) is None
            assert re.search(needle, text) is None, (name, needle)
    raw = bundle.read_bytes()
    assert b"NIGHTJAR" not in raw and b"acme-key" not in raw

    manifest = json.loads(entries[MANIFEST_NAME])
    by_label = {r["label"]: r for r in manifest["redactions"]}
    assert (
        by_label["pattern 1"]["count"] == 3
    )  # task text, task title? no: text + payload + validation? counted below
    assert by_label["pattern 1"]["pattern"] == r"NIGHTJAR-\d+"
    assert by_label["value of $ACME_API_KEY"]["count"] == 2
    assert by_label["value of $ACME_API_KEY"]["pattern"] is None
    assert "value of $SHORT_TOKEN" not in by_label  # too short to be a key; masking it would wreck the text
    assert by_label["sk- style API key"]["count"] == 1
    assert [r["label"] for r in summary.redactions] == list(by_label)

    assert verify_bundle(bundle).ok
    await import_bundle(other_store, bundle, trust=True)
    assert "[REDACTED]" in (await other_store.get_task(task_id)).text


async def test_a_pattern_that_survives_masking_refuses_the_export(store: Store, tmp_path: Path) -> None:
    task_id = await make_case(store)
    out = tmp_path / "x.zip"
    # Numbers are not text and JSON punctuation is not in any value: masking strings cannot remove
    # these matches, so the export must stop rather than ship them.
    for pattern in (r'"seq":\d', r'":"'):
        with pytest.raises(BundleError, match="still matches"):
            await export_bundle(store, [task_id], out, redact=[pattern], environ={})
    with pytest.raises(BundleError, match="invalid redaction pattern"):
        await export_bundle(store, [task_id], out, redact=["(unclosed"], environ={})
    with pytest.raises(BundleError, match="matches empty text"):
        await export_bundle(store, [task_id], out, redact=["x*"], environ={})
    assert list(tmp_path.glob("x.zip*")) == [] and list(tmp_path.glob(".x.zip*")) == []


async def test_open_bundle_shows_a_tampered_bundle_with_a_banner(
    exported: tuple[Path, str, str], tmp_path: Path
) -> None:
    bundle, task_id, sid = exported
    good = open_bundle(bundle)
    assert good.verified and "verified" in good.banner()
    bt = good.task(task_id[:8])
    assert bt.task.read_only and bt.task.origin == good.origin
    assert [e.seq for e in bt.events[sid]] == [1, 2, 3, 4, 5, 6]
    assert bt.validations[0].raw_response and bt.validations[0].prompt
    assert bt.attempts[0].packet is not None

    name = events_entry(sid)
    bad = rewrite(
        bundle, tmp_path / "bad.zip", lambda e: e.__setitem__(name, e[name].replace(b"10,935", b"9,000"))
    )
    opened = open_bundle(bad)
    assert not opened.verified
    assert "FAILED verification" in opened.banner() and name in opened.banner()
    assert "9,000" in (opened.task(task_id).events[sid][3].content or "")

    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"junk")
    with pytest.raises(BundleError, match="not a readable zip"):
        open_bundle(junk)


async def test_export_of_unknown_task_writes_nothing(store: Store, tmp_path: Path) -> None:
    from core.errors import StoreError

    with pytest.raises(StoreError):
        await export_bundle(store, ["nonexistent-task"], tmp_path / "x.zip", environ={})
    with pytest.raises(BundleError):
        await export_bundle(store, [], tmp_path / "x.zip", environ={})
    assert not any(p.name.startswith(("x.zip", ".x.zip")) for p in tmp_path.iterdir())


async def test_google_style_keys_are_always_redacted(store: Store, tmp_path: Path) -> None:
    key = "AIza" + "SyD-" + "x" * 30
    task = await store.create_task(f"My key is {key} do not leak it")
    out = tmp_path / "k.zip"
    await export_bundle(store, [task.id], out, environ={})
    with zipfile.ZipFile(out) as z:
        blob = b"".join(z.read(n) for n in z.namelist())
    assert key.encode() not in blob


async def test_chunked_evidence_round_trips_through_show_export_verify_import(
    store: Store, other_store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A big tool result lives as chunks, yet show, export, verify and import see it whole (#18.3)."""
    from core.cli.show import print_dossier
    from core.domain.content import ContentPolicy
    from core.store.models import AttemptRow, ContentChunkRow
    from core.tasks.dossier_json import task_dossier

    tiny = ContentPolicy(inline_limit=64, chunk_chars=32)
    store.content_policy = other_store.content_policy = tiny
    big = "Challenger Deep 10,935 m — «Tiefe» ✓ 😀\n" * 40
    task_id = await make_case(store, evidence=big)
    async with store.read_session() as s:
        stored_packet = await s.scalar(select(AttemptRow.packet).where(AttemptRow.task_id == task_id))
        longest_chunk = await s.scalar(select(func.max(func.length(ContentChunkRow.data))))
        raw_contents = (await s.scalars(select(EventRow.content).where(EventRow.task_id == task_id))).all()
    assert big not in json.dumps(stored_packet, ensure_ascii=False)  # the packet is an index
    assert len(json.dumps(stored_packet)) < 4000
    assert longest_chunk is not None and longest_chunk <= 32 * 4 + 16
    assert big not in raw_contents

    await print_dossier(await task_dossier(store, task_id, resolve=False), store)
    shown = capsys.readouterr().out
    assert big in shown, shown[:3000]  # streamed from the chunks, whole and in order

    bundle = tmp_path / "big.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    assert verify_bundle(bundle).ok
    await import_bundle(other_store, bundle, trust=True)
    assert await other_store.list_attempts(task_id) == await store.list_attempts(task_id)
    sid = await main_session(store, task_id)
    assert [_event_view(e) for e in await other_store.get_session_events(sid)] == [
        _event_view(e) for e in await store.get_session_events(sid)
    ]
    copied = await other_store.get_attempt((await other_store.list_attempts(task_id))[0].id, resolve=False)
    assert copied.packet is not None
    assert copied.packet["main_run"]["tool_results"][0]["content_ref"]["length"] == len(big)
