"""Attempts: one row per try at a task, numbered per task."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from core.domain.content import REF_SUFFIX, ContentRef, is_ref
from core.domain.records import AttemptRecord
from core.store.base import new_id
from core.store.big_values import offload_values, read_back
from core.store.chunks import ChunkRepository, has_refs, offload_tree
from core.store.models import AttemptRow, utcnow
from core.store.search_index import index_attempt


class AttemptRepository(ChunkRepository):
    """A mixin of ``Store``.

    A packet is stored as an index: its big texts (tool results, outputs) become chunk references
    in the same transaction (``offload_tree``), so no attempt row approaches a database value limit.
    Readers get the packet back whole by default; ``resolve=False`` keeps the references for
    streaming readers (``core.evidence.content``).
    """

    async def create_attempt(self, task_id: str, index: int, *, trigger: str, prompt: str) -> AttemptRecord:
        row = AttemptRow(
            id=new_id(), task_id=task_id, index=index, trigger=trigger, prompt=prompt, state="running"
        )
        row.started_at = utcnow()
        return await self._insert(row, AttemptRecord)

    async def update_attempt(self, attempt_id: str, **fields: Any) -> AttemptRecord:
        """The updated row, its packet as an index (references kept): callers need its ids and
        state, and resolving would read a gigabyte task back whole at the end of every attempt."""
        values = {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}
        policy = self.content_policy
        async with self._write() as s:
            if values.get("packet") is not None or policy.offloads(values.get("final_output")):
                task_id = await s.scalar(select(AttemptRow.task_id).where(AttemptRow.id == attempt_id))
                conn = await s.connection()
                if values.get("packet") is not None:
                    values["packet"] = await conn.run_sync(offload_tree, values["packet"], task_id, policy)
                values = await conn.run_sync(offload_values, AttemptRow, values, task_id, policy)
            await s.execute(update(AttemptRow).where(AttemptRow.id == attempt_id).values(**values))
            if "packet" in values or "final_output" in values:  # the search index, same transaction
                await index_attempt(await s.connection(), attempt_id)
        return await self.get_attempt(attempt_id, resolve=False)

    async def get_attempt(self, attempt_id: str, *, resolve: bool = True) -> AttemptRecord:
        record = await self._get(AttemptRecord, AttemptRow, attempt_id, "attempt")
        return (await self._resolve_packets([record], resolve))[0]

    async def list_attempts(
        self, task_id: str, *, resolve: bool = True, texts: bool = True
    ) -> list[AttemptRecord]:
        """The task's attempts; ``texts=False`` for their facts alone: an answer kept in the chunk
        store stays there (``final_output`` and the packet's answer empty, their references set)."""
        q = select(AttemptRow).where(AttemptRow.task_id == task_id).order_by(AttemptRow.index)
        records = await self._select(AttemptRecord, q)
        return await self._resolve_packets(records, resolve) if texts else records

    async def _packet_answer(self, record: AttemptRecord) -> AttemptRecord:
        """The packet's answer read back even when its evidence stays as references: every reader
        of a packet reads ``final_output`` as text, and only evidence items know their references."""
        packet = record.packet
        ref = packet.get("final_output" + REF_SUFFIX) if packet is not None else None
        if packet is None or not is_ref(packet, "final_output" + REF_SUFFIX) or not isinstance(ref, dict):
            return record
        text = await self.read_content(ContentRef.model_validate(ref))
        return record.model_copy(
            update={"packet": {**packet, "final_output": text, "final_output_ref": None}}
        )

    async def _resolve_packets(self, records: list[AttemptRecord], resolve: bool) -> list[AttemptRecord]:
        # The answer is read back whatever ``resolve`` says: every reader of an attempt reads it.
        records = await read_back(self, AttemptRow, records)
        if not resolve:
            return [await self._packet_answer(r) for r in records]
        out: list[AttemptRecord] = []
        for record in records:
            if record.packet is not None and has_refs(record.packet):
                record = record.model_copy(update={"packet": await self.resolve_tree(record.packet)})
            out.append(record)
        return out
