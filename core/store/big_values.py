"""Big single texts of a row (an answer, a run's output, a validator's prompt) kept in the chunk store.

Migration 0012_big_values: a text over the inline limit is written as chunks, its column left
empty and its reference in the ``*_ref`` column beside it, so no row holds a value near a database
limit (an 11 MB answer was an 11 MB value, a validator's prompt twice that). Readers get records
with the text whole: ``read_back`` fills the empty columns from their references with one small
query per list, so records, dossiers, bundles and views see the shape they always had. A row
written before the migration holds its text in the column and reads as it always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, select

from core.domain.content import ContentPolicy, ContentRef
from core.domain.records import AttemptRecord, RunRecord, ValidationRecord
from core.store.chunks import ChunkRepository, put_content
from core.store.models import AttemptRow, Base, RunRow, ValidationRow

# The table's big text column and the column holding its chunk reference.
BIG_COLUMNS: dict[type[Base], tuple[str, str]] = {
    AttemptRow: ("final_output", "final_output_ref"),
    RunRow: ("output_text", "output_text_ref"),
    ValidationRow: ("prompt", "prompt_ref"),
}

R = TypeVar("R", AttemptRecord, RunRecord, ValidationRecord)


def offload_values(
    conn: Connection, table: type[Base], values: dict[str, Any], owner: str | None, policy: ContentPolicy
) -> dict[str, Any]:
    """``values`` for an insert or update of ``table``, its big text moved to the chunk store."""
    text_column, ref_column = BIG_COLUMNS[table]
    text = values.get(text_column)
    if not isinstance(text, str) or not policy.offloads(text):
        return values
    ref = put_content(conn, text, owner, policy)
    return {**values, text_column: "", ref_column: ref.model_dump()}


async def read_back(store: ChunkRepository, table: type[Base], records: Sequence[R]) -> list[R]:
    """Records of ``table`` with every text that went to the chunk store read back into its field."""
    text_column, ref_column = BIG_COLUMNS[table]
    blank = [r.id for r in records if getattr(r, text_column) == ""]
    if not blank:
        return list(records)
    key = table.__table__.c.id
    refs: dict[str, ContentRef] = {}
    async with store.read_session() as s:
        for start in range(0, len(blank), 500):
            q = select(key, table.__table__.c[ref_column]).where(key.in_(blank[start : start + 500]))
            for row_id, ref in (await s.execute(q)).all():
                if isinstance(ref, dict):
                    refs[str(row_id)] = ContentRef.model_validate(ref)
    out: list[R] = []
    for record in records:
        ref_found = refs.get(record.id)
        if ref_found is not None:
            record = record.model_copy(update={text_column: await store.read_content(ref_found)})
        out.append(record)
    return out
