"""Streaming bundles (issue 18, point 3): big texts as content members, masked chunk by chunk.

Export, verify and import must hold one chunk, not the task: the checks here are counters and
contents, never timings or memory readings.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.bundle import BundleError, export_bundle, import_bundle, open_bundle, verify_bundle
from core.bundle.format import (
    MANIFEST_NAME,
    canonical,
    content_member,
    event_hash,
    events_entry,
    genesis_hash,
    sha256_hex,
    task_entry,
)
from core.bundle.redact import MASK, Redactor
from core.bundle.stream import StreamMasker
from core.bundle.zipread import ZipLimits
from core.domain.content import ContentPolicy
from core.store import NewEvent, Store
from tests.secret_samples import SHAPED

TINY = ContentPolicy(inline_limit=64, chunk_chars=32)
GITHUB_TOKEN = "ghp_" + "a1" * 18  # 40 characters: longer than a tiny chunk, so it must straddle


async def big_task(store: Store, texts: list[str]) -> str:
    """A task whose tool results are ``texts`` (stored as chunks under the tiny policy) with a packet."""
    from core.team.packet import build_attempt_packet

    task = await store.create_task("streamed evidence")
    assert task.main_session_id is not None
    attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt=task.text)
    run = await store.create_run(
        session_id=task.main_session_id,
        kind="agent",
        model="scripted/agent",
        task_id=task.id,
        attempt_id=attempt.id,
    )
    events = [NewEvent(kind="run_started", payload={})]
    events += [
        NewEvent(
            kind="tool_result_recorded", payload={"tool_name": "big", "tool_call_id": f"c{i}"}, content=t
        )
        for i, t in enumerate(texts)
    ]
    events.append(
        NewEvent(kind="run_finished", payload={"finish_reason": "stop", "output_text": "done [E1]"})
    )
    await store.append_events(task.main_session_id, events, run_id=run.id, task_id=task.id)
    packet = await build_attempt_packet(
        store,
        task_id=task.id,
        attempt_index=1,
        main_session_id=task.main_session_id,
        main_run_id=run.id,
        final_output="done [E1]",
    )
    await store.update_attempt(
        attempt.id, state="finished", final_output="done [E1]", packet=packet.model_dump(mode="json")
    )
    return task.id


def prose(n: int, seed: int) -> str:
    return "".join(f"line {seed}-{i:05d}: Challenger Deep «Tiefe» ✓ 😀\n" for i in range(n))


def entries_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None]) -> None:
    """A real zip re-written member by member; ``change`` returns new bytes, or None to drop one."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info.filename, data)


async def tool_results(store: Store, task_id: str) -> list[str | None]:
    task = await store.get_task(task_id)
    assert task.main_session_id is not None
    events = await store.get_session_events(task.main_session_id)
    return [e.content for e in events if e.kind == "tool_result_recorded"]


@pytest.fixture
async def fresh_store(tmp_path: Path) -> AsyncIterator[Store]:
    s = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'fresh.sqlite3'}")
    s.content_policy = TINY
    yield s
    await s.close()


async def test_chunked_task_round_trips_as_content_members(
    store: Store, fresh_store: Store, tmp_path: Path
) -> None:
    """Export -> verify -> import on each engine: members hold the texts, JSON holds references."""
    store.content_policy = TINY
    texts = [prose(20, 1), prose(30, 2), prose(20, 1)]  # the third repeats the first: one member
    task_id = await big_task(store, texts)
    bundle = tmp_path / "stream.zip"
    summary = await export_bundle(store, [task_id], bundle, environ={})

    raw = entries_of(bundle)
    members = sorted(n for n in raw if n.startswith("content/"))
    assert len(members) == 2
    for name in members:
        assert name == content_member(sha256_hex(raw[name]))
    manifest = json.loads(raw[MANIFEST_NAME])
    assert manifest["format_version"] == 2
    for name in members:
        assert manifest["entries"][name] == {"sha256": sha256_hex(raw[name]), "size": len(raw[name])}
    task = await store.get_task(task_id)
    assert task.main_session_id is not None
    log = raw[events_entry(task.main_session_id)].decode()
    assert all(t not in log for t in texts)  # the chain holds references, not texts
    refs = [json.loads(line)["payload"].get("content_ref") for line in log.splitlines()]
    assert {r["member"] for r in refs if r} == set(members)
    attempts = raw[task_entry(task_id, "attempts.json")].decode()
    assert all(t not in attempts for t in texts) and '"member":"content/' in attempts
    assert summary.entries == len(raw)

    report = verify_bundle(bundle)
    assert report.ok, report.failures

    opened = open_bundle(bundle)
    for ref in refs:
        if ref:
            text = await opened.read_content(ref)
            assert text in texts
            assert await opened.read_range(ref, 7, 20) == text[7:27]

    await import_bundle(fresh_store, bundle, trust=True)
    assert await tool_results(fresh_store, task_id) == texts
    original = await store.list_attempts(task_id)
    assert await fresh_store.list_attempts(task_id) == original  # packets resolve to the same texts


async def test_secret_straddling_a_chunk_boundary_is_masked(
    store: Store, fresh_store: Store, tmp_path: Path
) -> None:
    store.content_policy = TINY
    # The token starts 10 characters before the end of a 32-character chunk and runs into the next.
    text = "x" * 22 + GITHUB_TOKEN + " and " + "y" * 200
    task_id = await big_task(store, [text])
    bundle = tmp_path / "secret.zip"
    summary = await export_bundle(store, [task_id], bundle, environ={})
    raw = entries_of(bundle)
    assert all(GITHUB_TOKEN not in blob.decode() for blob in raw.values())
    member = next(n for n in raw if n.startswith("content/"))
    assert raw[member].decode() == "x" * 22 + MASK + " and " + "y" * 200
    assert {r["label"]: r["count"] for r in summary.redactions}["GitHub Token"] == 1
    assert verify_bundle(bundle).ok


@pytest.mark.parametrize("piece", [1, 3, 7, 32, 1000])
def test_stream_masker_matches_the_whole_text_masking(piece: int) -> None:
    env = {"ACME_TOKEN": "plain-Ww9Ww9Ww9"}
    text = " filler ".join([*SHAPED.values(), "plain-Ww9Ww9Ww9", "NIGHTJAR-7731"]) + " end"
    whole = Redactor.build([r"NIGHTJAR-\d+"], env)
    streamed = Redactor.build([r"NIGHTJAR-\d+"], env)
    masker = StreamMasker(streamed, "e", overlap=256)
    out = "".join(masker.run(text[i : i + piece] for i in range(0, len(text), piece)))
    assert out == whole.text(text, "e")
    assert streamed.summary() == whole.summary()


def test_every_rule_still_fires_on_its_sample() -> None:
    """The literal pre-checks never skip a real secret: each shape masks its sample and counts it."""
    for kind, sample in SHAPED.items():
        redactor = Redactor.build([], {})
        masked = redactor.text(f"before {sample} after", "e")
        assert sample not in masked and MASK in masked, kind
        assert kind in {r["label"] for r in redactor.summary()}, kind
    env = Redactor.build([r"NIGHTJAR-\d+"], {"ACME_TOKEN": "plain-Ww9Ww9Ww9"})
    assert env.text("NIGHTJAR-7 plain-Ww9Ww9Ww9", "e") == f"{MASK} {MASK}"


def test_prechecks_change_nothing_on_mixed_text() -> None:
    """With and without pre-checks, the same text masks to the same result with the same counts."""
    parts = [*SHAPED.values(), "AWS key='" + "a" * 40 + "'", 'aws_token: "' + "B" * 40 + '"']
    text = "\n".join(f'{{"n": {i}, "v": "{p}", "url": "https://x.org/{i}"}}' for i, p in enumerate(parts * 3))
    fast = Redactor.build([r"https?://\S+"], {})
    slow = Redactor.build([r"https?://\S+"], {})
    for rule in slow.rules:
        rule.needle = None
    slow.shape_needles = [None] * len(slow.shape_needles)
    assert fast.text(text, "e") == slow.text(text, "e")
    assert fast.summary() == slow.summary()


@pytest.fixture
async def exported(tmp_path: Path) -> AsyncIterator[tuple[Path, str]]:
    s = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'src.sqlite3'}")
    s.content_policy = TINY
    task_id = await big_task(s, [prose(10, 1), prose(12, 2)])
    bundle = tmp_path / "good.zip"
    await export_bundle(s, [task_id], bundle, environ={})
    await s.close()
    yield bundle, task_id


def _first_member(bundle: Path) -> str:
    return sorted(n for n in entries_of(bundle) if n.startswith("content/"))[0]


async def test_altered_content_member_is_rejected(
    exported: tuple[Path, str], fresh_store: Store, tmp_path: Path
) -> None:
    bundle, _ = exported
    member = _first_member(bundle)
    forged = tmp_path / "forged.zip"
    rewrite(bundle, forged, lambda n, b: b.replace(b"Challenger", b"Challenged") if n == member else b)
    report = verify_bundle(forged)
    assert not report.ok
    assert report.failures[0] == f"{member}: sha256 mismatch (content changed)"
    with pytest.raises(BundleError, match="sha256 mismatch"):
        await import_bundle(fresh_store, forged, trust=True)


async def test_dropped_content_member_is_rejected(
    exported: tuple[Path, str], fresh_store: Store, tmp_path: Path
) -> None:
    bundle, _ = exported
    member = _first_member(bundle)
    dropped = tmp_path / "dropped.zip"
    rewrite(bundle, dropped, lambda n, b: None if n == member else b)
    report = verify_bundle(dropped)
    assert f"manifest lists {member} but the bundle lacks it (entry removed)" in report.failures
    with pytest.raises(BundleError, match="lacks it"):
        await import_bundle(fresh_store, dropped, trust=True)


async def test_reference_to_an_absent_member_is_rejected(exported: tuple[Path, str], tmp_path: Path) -> None:
    """Member and its manifest line both removed (an unsigned bundle): the reference still names it."""
    bundle, _ = exported
    member = _first_member(bundle)

    def drop(name: str, blob: bytes) -> bytes | None:
        if name == member:
            return None
        if name == MANIFEST_NAME:
            manifest = json.loads(blob)
            del manifest["entries"][member]
            return (canonical(manifest) + "\n").encode()
        return blob

    edited = tmp_path / "absent.zip"
    rewrite(bundle, edited, drop)
    report = verify_bundle(edited)
    assert not report.ok
    assert any(
        f.endswith(f"a reference names {member}, which the bundle lacks (content member removed)")
        for f in report.failures
    ), report.failures


async def test_content_members_are_bounded_like_other_entries(exported: tuple[Path, str]) -> None:
    bundle, _ = exported
    member = _first_member(bundle)
    report = verify_bundle(bundle, limits=ZipLimits(max_content_bytes=100))
    assert any(
        f.startswith(f"{member}: declares") and "limit for one content member" in f for f in report.failures
    )
    report = verify_bundle(bundle, limits=ZipLimits(max_content_total_bytes=100))
    assert any("over the 100-byte limit" in f for f in report.failures)


async def test_a_highly_compressible_content_member_is_bounded_by_its_declared_size(tmp_path: Path) -> None:
    """3 MiB of one letter deflates over 1000:1 and still verifies: a ratio is no test of a bomb;
    the declared size is, and the member is refused once it declares more than its cap."""
    s = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'bomb.sqlite3'}")
    s.content_policy = ContentPolicy(inline_limit=64, chunk_chars=1 << 20)
    task_id = await big_task(s, ["a" * (3 << 20)])
    bundle = tmp_path / "letters.zip"
    await export_bundle(s, [task_id], bundle, environ={})
    await s.close()
    assert verify_bundle(bundle).ok
    report = verify_bundle(bundle, limits=ZipLimits(max_content_bytes=2 << 20))
    assert any("limit for one content member; not inflated" in f for f in report.failures), report.failures


async def test_export_reads_each_chunk_once_and_never_a_whole_text(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory is bounded by a chunk: every read the export makes is one stored chunk, each once."""
    store.content_policy = TINY
    texts = [prose(8, i) for i in range(4)]
    task_id = await big_task(store, texts)
    chunks = sum(-(-len(t) // TINY.chunk_chars) for t in texts)
    assert chunks >= 40
    reads: list[int] = []
    chunk_text = store.chunk_text

    async def counting(chunk_sha: str) -> str:
        text = await chunk_text(chunk_sha)
        reads.append(len(text))
        return text

    async def whole(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("export must not read a whole text")

    monkeypatch.setattr(store, "chunk_text", counting)
    monkeypatch.setattr(store, "read_content", whole)
    monkeypatch.setattr(store, "resolve_tree", whole)
    await export_bundle(store, [task_id], tmp_path / "counted.zip", environ={})
    assert len(reads) == chunks
    assert max(reads) <= TINY.chunk_chars


async def test_old_format_bundle_verifies_opens_and_imports(
    store: Store, fresh_store: Store, tmp_path: Path
) -> None:
    """A format-1 bundle (texts inline, written as versions before 2 wrote them) still reads."""
    texts = [prose(5, 1)]
    task_id = await big_task(store, texts)
    bundle = tmp_path / "v1.zip"
    await write_format1(store, task_id, bundle)
    report = verify_bundle(bundle)
    assert report.ok, report.failures
    opened = open_bundle(bundle)
    events = opened.task(task_id).all_events()
    assert [e.content for e in events if e.kind == "tool_result_recorded"] == texts
    await import_bundle(fresh_store, bundle, trust=True)
    assert await tool_results(fresh_store, task_id) == texts


async def write_format1(store: Store, task_id: str, out: Path) -> None:
    """The format-1 layout: every entry whole, texts resolved inline, no content members."""
    task = await store.get_task(task_id)
    sessions = await store.list_sessions(task_id)
    files: dict[str, Any] = {
        "task.json": task.model_dump(mode="json"),
        "attempts.json": [a.model_dump(mode="json") for a in await store.list_attempts(task_id)],
        "sessions.json": [s.model_dump(mode="json") for s in sessions],
        "runs.json": [r.model_dump(mode="json") for r in await store.list_runs(task_id=task_id)],
        "validations.json": [],
        "feedback.json": [],
    }
    entries = {task_entry(task_id, n): (canonical(o) + "\n").encode() for n, o in files.items()}
    chains: dict[str, Any] = {}
    for session in sessions:
        prev = genesis_hash(session.id)
        lines = []
        records = await store.get_session_events(session.id)
        for r in records:
            event = {k: v for k, v in r.model_dump(mode="json").items() if k != "id"}
            digest = event_hash(prev, event)
            lines.append(canonical({**event, "prev_hash": prev, "hash": digest}))
            prev = digest
        entries[events_entry(session.id)] = ("\n".join(lines) + "\n" if lines else "").encode()
        chains[session.id] = {
            "entry": events_entry(session.id),
            "events": len(records),
            "first_seq": records[0].seq if records else None,
            "last_seq": records[-1].seq if records else None,
            "head": prev,
        }
    manifest = {
        "format": "evidence-desk-case-bundle",
        "format_version": 1,
        "app_version": "0.old",
        "created_at": "2025-01-01T00:00:00Z",
        "task_ids": [task_id],
        "entries": {n: {"sha256": sha256_hex(b), "size": len(b)} for n, b in entries.items()},
        "chains": chains,
        "redactions": [],
    }
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST_NAME, (canonical(manifest) + "\n").encode())
        for name, blob in entries.items():
            zf.writestr(name, blob)


def test_leftover_check_streams_across_pieces() -> None:
    """A pattern matching only across two written pieces is still found (the overlap window)."""
    from core.bundle.stream import LeftoverScan

    redactor = Redactor.build([r"NIGHT\]JAR"], {})
    scan = LeftoverScan(redactor, "entry", batch=4)
    scan.feed("... NIGHT]")
    assert scan.found is None  # searched: no match yet
    scan.feed("JAR ...")
    assert scan.found == "pattern 1"
    lazy = LeftoverScan(redactor, "entry")
    for piece in ("... NIGHT]", "JAR ..."):
        lazy.feed(piece)
    assert lazy.flush() == "pattern 1"


async def test_an_opened_bundle_serves_packet_items_like_the_store(store: Store, tmp_path: Path) -> None:
    """The desk and the report read a bundle's big items through the same readers as a workspace's."""
    from core.bundle.opened import OpenedBundle
    from core.domain.evidence import TaskEvidencePacket
    from core.evidence.content import ContentReader, item_range, item_text

    store.content_policy = TINY
    texts = [prose(12, 1), prose(9, 2)]
    task_id = await big_task(store, texts)
    bundle = tmp_path / "served.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    opened: OpenedBundle = open_bundle(bundle)
    reader: ContentReader = opened
    attempt = opened.task(task_id).attempts[0]
    assert attempt.packet is not None
    packet = TaskEvidencePacket.model_validate(attempt.packet)
    items = packet.main_run.tool_results if packet.main_run is not None else []
    assert [item.content_ref is not None for item in items] == [True, True]
    assert [await item_text(reader, item) for item in items] == texts
    assert await item_range(reader, items[1], 40, 25) == texts[1][40:65]
    with pytest.raises(BundleError, match="holds no verified content"):
        await opened.read_content("0" * 64)


async def test_member_cursor_pages_forward_without_starting_over(store: Store, tmp_path: Path) -> None:
    from core.bundle.members import MemberCursor, member_of

    store.content_policy = TINY
    text = prose(60, 3)
    task_id = await big_task(store, [text])
    bundle = tmp_path / "paged.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    opened = open_bundle(bundle)
    sha = next(iter(opened.content_members)).removeprefix("content/").removesuffix(".txt")
    cursor = MemberCursor(bundle, member_of(sha), block=50)  # many pieces, split inside characters
    pages = [
        (0, 100),
        (100, 100),
        (150, 400),
        (540, 20),
        (900, 7),
        (len(text) - 30, 100),
        (len(text) + 5, 10),
    ]
    assert [cursor.read(o, n) for o, n in pages] == [text[o : o + n] for o, n in pages]
    assert cursor.restarts == 1  # forward paging never re-inflated from the start
    assert cursor.read(10, 20) == text[10:30]
    assert cursor.restarts == 2  # going back starts over, and says so


async def test_a_missing_chunk_fails_the_export_and_leaves_no_file(store: Store, tmp_path: Path) -> None:
    from sqlalchemy import delete, select

    from core.errors import StoreError
    from core.store.models import ContentChunkRow

    store.content_policy = TINY
    task_id = await big_task(store, [prose(10, 4)])
    async with store.read_session() as s:
        victim = (await s.scalars(select(ContentChunkRow.sha256).limit(1))).one()
    async with store._write() as s:
        await s.execute(delete(ContentChunkRow).where(ContentChunkRow.sha256 == victim))
    out = tmp_path / "out" / "broken.zip"
    with pytest.raises(StoreError, match="missing from the workspace"):
        await export_bundle(store, [task_id], out, environ={})
    assert list(out.parent.iterdir()) == []


async def test_line_separators_inside_texts_do_not_break_the_log(
    store: Store, fresh_store: Store, tmp_path: Path
) -> None:
    """Canonical JSON writes U+2028, U+2029 and U+0085 raw; the log is split on newlines only."""
    odd = "para\u2028graph\u2029end \x85 next"
    task = await store.create_task("odd separators")
    assert task.main_session_id is not None
    await store.append_events(
        task.main_session_id,
        [NewEvent(kind="tool_result_recorded", payload={"tool_call_id": "c", "note": odd}, content=odd)],
        task_id=task.id,
    )
    bundle = tmp_path / "odd.zip"
    await export_bundle(store, [task.id], bundle, environ={})
    report = verify_bundle(bundle)
    assert report.ok, report.failures
    opened = open_bundle(bundle)
    assert opened.load_problems == []
    assert [e.content for e in opened.task(task.id).all_events()] == [odd]
    await import_bundle(fresh_store, bundle, trust=True)
    assert await tool_results(fresh_store, task.id) == [odd]


async def test_verify_streams_event_logs_and_reports_as_before(store: Store, tmp_path: Path) -> None:
    """verify checks logs line by line without keeping them; its findings equal the kept-log path's."""
    from core.bundle.verify import load_bundle

    store.content_policy = TINY
    task_id = await big_task(store, [prose(6, 1), prose(7, 2)])
    bundle = tmp_path / "logs.zip"
    await export_bundle(store, [task_id], bundle, environ={})
    task = await store.get_task(task_id)
    assert task.main_session_id is not None
    log = events_entry(task.main_session_id)
    streamed = load_bundle(bundle, keep_logs=False)
    assert streamed.report.ok and log not in streamed.contents
    assert streamed.report.events_checked == load_bundle(bundle).report.events_checked > 0

    def tamper(name: str, blob: bytes) -> bytes | None:
        if name != log:
            return blob
        lines = blob.split(b"\n")
        del lines[1]  # an event removed
        return b"\n".join(lines).replace(b'"tool_name":"big"', b'"tool_name":"bug"')

    edited = tmp_path / "tampered.zip"
    rewrite(bundle, edited, tamper)
    kept, lean = load_bundle(edited).report, load_bundle(edited, keep_logs=False).report
    assert not lean.ok
    assert lean.failures == kept.failures
    assert lean.events_checked == kept.events_checked


async def test_a_failed_import_takes_its_stored_texts_back_out(
    exported: tuple[Path, str], fresh_store: Store
) -> None:
    """The texts are streamed in before the rows; when the rows fail, they leave with them.

    Content another task already holds stays: a task of the store owns the same text.
    """
    from sqlalchemy import func, insert, select

    from core.store.models import ContentChunkRow, ContentObjectRow, ContentOwnerRow, SessionRow

    bundle, _ = exported
    keeper = await fresh_store.create_task("keeps one text")
    kept = await fresh_store.put_content(prose(10, 1), owner=keeper.id)  # the bundle's first text

    async def counts() -> tuple[int, int, int]:
        async with fresh_store.engine.connect() as conn:
            return (
                int(await conn.scalar(select(func.count()).select_from(ContentChunkRow)) or 0),
                int(await conn.scalar(select(func.count()).select_from(ContentObjectRow)) or 0),
                int(await conn.scalar(select(func.count()).select_from(ContentOwnerRow)) or 0),
            )

    before = await counts()
    opened = open_bundle(bundle)
    sid = opened.tasks[0].sessions[0].id
    async with fresh_store.write_engine.begin() as conn:  # the session insert will collide
        await conn.execute(
            insert(SessionRow), [{"id": sid, "task_id": None, "kind": "main", "label": "", "next_seq": 1}]
        )
    with pytest.raises(BundleError, match="Nothing was imported"):
        await import_bundle(fresh_store, bundle, trust=True)
    assert await counts() == before
    assert await fresh_store.read_content(kept) == prose(10, 1)
