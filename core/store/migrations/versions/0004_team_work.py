"""team work: batches, per-task batch keys and metadata, schedules

A batch re-run must queue nothing twice, so each batch task carries (batch_id, batch_key) under a
unique constraint: the database, not a read-then-insert, refuses the duplicate row. Schedules
keep their next firing and last verdict beside the task they fire, so any desk or worker can
list them without asking procrastinate.

Revision ID: 0004_team_work
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_team_work"
down_revision: str | None = "0003_queue_counts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=500), nullable=False),
        sa.Column("row_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    # Plain ADD COLUMN and a unique index, never a batch table copy: on SQLite a copy would drop
    # the search index's triggers on tasks (migration 0002).
    op.add_column("tasks", sa.Column("batch_id", sa.String(length=64), nullable=True))
    op.add_column("tasks", sa.Column("batch_key", sa.String(length=200), nullable=True))
    op.add_column("tasks", sa.Column("task_metadata", sa.JSON(), nullable=True))
    op.add_column("tasks", sa.Column("given_answer", sa.Text(), nullable=True))
    op.create_index("uq_tasks_batch_key", "tasks", ["batch_id", "batch_key"], unique=True)
    op.create_table(
        "schedules",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("task_id", sa.String(length=32), nullable=False),
        sa.Column("cron", sa.String(length=200), nullable=True),
        sa.Column("interval_s", sa.Integer(), nullable=True),
        sa.Column("checklist", sa.Text(), nullable=True),
        sa.Column("verify_heartbeat", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_verdict", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_schedules_task_id", "schedules", ["task_id"])
    op.create_index("ix_schedules_next_run_at", "schedules", ["next_run_at"])


def downgrade() -> None:
    op.drop_index("ix_schedules_next_run_at", table_name="schedules")
    op.drop_index("ix_schedules_task_id", table_name="schedules")
    op.drop_table("schedules")
    op.drop_index("uq_tasks_batch_key", table_name="tasks")
    # SQLite (3.35+) and PostgreSQL both drop a column in place, keeping the search triggers.
    for column in ("given_answer", "task_metadata", "batch_key", "batch_id"):
        op.drop_column("tasks", column)
    op.drop_table("batches")
