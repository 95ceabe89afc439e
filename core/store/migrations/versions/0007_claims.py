"""review claims: who is reviewing a task, until when

A claim is a lease, not a lock held by a connection: a desk that crashes simply lets its lease run
out, and another reviewer gets the task afterwards. One row per task (the task id is the key), so
two reviewers can never both hold it; expired rows are ignored by readers and overwritten by the
next claimer rather than swept.

Revision ID: 0007_claims
Revises: 0006_notify
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_claims"
down_revision: str | None = "0006_notify"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "claims",
        sa.Column("task_id", sa.String(32), sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("reviewer", sa.String(200), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_claims_reviewer_expires", "claims", ["reviewer", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_claims_reviewer_expires", table_name="claims")
    op.drop_table("claims")
