"""big_values: big answers, run outputs and validator prompts live in the chunk store

A model's answer (``attempts.final_output``), a run's output (``runs.output_text``) and the prompt a
validator saw (``validations.prompt``) were plain text columns: an 11 MB answer made 11 MB values
(the prompt twice that). A text over the inline limit is now stored as chunks (migration
0008_chunks), its column left empty, and its reference kept in the new ``*_ref`` column beside it.
Nullable: rows written before, and every small text, have none; old big values still read as they are.

Revision ID: big_values
Revises: calibration_index
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "big_values"
down_revision: str | None = "calibration_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = (("attempts", "final_output_ref"), ("runs", "output_text_ref"), ("validations", "prompt_ref"))


def upgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column(column, sa.JSON(), nullable=True))


def downgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column(column)
