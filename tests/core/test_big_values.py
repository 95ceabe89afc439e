"""Big answers, run outputs, validator prompts and payload texts live in the chunk store (0012_big_values).

Each is written through the store with a small inline limit, so a few kilobytes stand for the
megabytes of a real answer: the row keeps an empty text and a reference, and every reader gets
the text back whole. A row written before the migration, its big text inline, still reads.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.domain.content import ContentPolicy
from core.domain.event_codec import encode
from core.domain.event_payloads import LlmResponse, RunEnd
from core.store import Store
from core.store.chunks import CHUNKED_PAYLOAD

BIG = "An answer of many words, " * 400 + "THE-END"


async def _store(tmp_path: Path) -> Store:
    store = await Store.open(str(tmp_path / "ws.sqlite3"))
    store.content_policy = ContentPolicy(inline_limit=1000, chunk_chars=4096)
    return store


def _raw(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_answer_output_prompt_and_payload_texts_are_chunks_and_read_back_whole(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        task = await store.create_task("Write a lot.")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Write a lot.")
        await store.update_attempt(
            attempt.id, final_output=BIG, packet={"task_id": task.id, "final_output": BIG}
        )
        session = await store.create_session(task_id=task.id, kind="agent")
        run = await store.create_run(session_id=session.id, kind="agent", model="m", task_id=task.id)
        await store.finish_run(run.id, finish_reason="stop", output_text=BIG)
        await store.add_validation(
            task_id=task.id,
            attempt_id=attempt.id,
            attempt_index=1,
            result={"status": "accepted", "score": 0.9},
            raw_response="{}",
            prompt=f"Judge this: {BIG}",
            debug={},
        )
        for payload in (LlmResponse(content=BIG), RunEnd(output_text=BIG)):
            await store.append_event(session.id, *encode(payload), run_id=run.id, task_id=task.id)
        await store.flush()

        db = tmp_path / "ws.sqlite3"
        assert _raw(db, "select final_output, final_output_ref is not null from attempts") == [("", 1)]
        assert _raw(db, "select output_text, output_text_ref is not null from runs") == [("", 1)]
        assert _raw(db, "select prompt, prompt_ref is not null from validations") == [("", 1)]
        longest = _raw(db, "select max(length(payload)), max(length(packet)) from events, attempts")[0]
        assert all(isinstance(n, int) and n < 2000 for n in longest), longest

        for resolve in (True, False):
            (read,) = await store.list_attempts(task.id, resolve=resolve)
            assert read.final_output == BIG
            assert read.packet is not None and read.packet["final_output"] == BIG
            assert (await store.get_attempt(attempt.id, resolve=resolve)).final_output == BIG
            events = await store.get_session_events(session.id, resolve=resolve)
            assert [e.payload.get("content") or e.payload.get("output_text") for e in events] == [BIG, BIG]
            assert not any(CHUNKED_PAYLOAD in e.payload for e in events)
        assert (await store.get_run(run.id)).output_text == BIG
        assert [r.output_text for r in await store.list_runs(task_id=task.id)] == [BIG]
        assert [v.prompt for v in await store.list_validations(task.id)] == [f"Judge this: {BIG}"]
    finally:
        await store.close()


async def test_a_big_text_written_inline_before_the_migration_still_reads(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        task = await store.create_task("Old.")
        attempt = await store.create_attempt(task.id, 1, trigger="initial", prompt="Old.")
        session = await store.create_session(task_id=task.id, kind="agent")
        run = await store.create_run(session_id=session.id, kind="agent", model="m", task_id=task.id)
        await store.append_event(
            session.id, *encode(LlmResponse(content="small")), run_id=run.id, task_id=task.id
        )
        await store.flush()
    finally:
        await store.close()
    db = tmp_path / "ws.sqlite3"
    with sqlite3.connect(db) as conn:  # as a version before 0012_big_values wrote them: inline
        conn.execute("update attempts set final_output = ?", (BIG,))
        conn.execute("update runs set output_text = ?", (BIG,))
        conn.execute("update events set payload = json_set(payload, '$.content', ?)", (BIG,))
    store = await _store(tmp_path)
    try:
        assert (await store.get_attempt(attempt.id)).final_output == BIG
        assert (await store.get_run(run.id)).output_text == BIG
        (event,) = await store.get_session_events(session.id, resolve=False)
        assert event.payload["content"] == BIG
    finally:
        await store.close()
