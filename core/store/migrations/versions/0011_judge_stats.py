"""judge_stats: a reason code on each analyst decision

Decisions carried free text only, which cannot be counted. ``feedback.reason`` holds one code of
the workspace's reason taxonomy (``core/domain/reasons.py``) on a satisfied, revise or abandon,
so calibration counts reasons per cell and search finds them. Nullable: older decisions and
decisions given without a reason have none.

Revision ID: judge_stats
Revises: 0010_presence
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "judge_stats"
down_revision: str | None = "0010_presence"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("feedback") as batch:
        batch.add_column(sa.Column("reason", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("feedback") as batch:
        batch.drop_column("reason")
