"""team_files: a schedule's last firing keeps its status and its reason

``last_verdict`` (64 characters) held what a firing that ran concluded; a firing that failed (an
unreadable checklist, a task that ended ``failed``, an error) left nothing, so ``schedule list``
showed ``last -`` while every firing failed. ``last_status`` is ``ran``, ``failed``, ``skipped``
or ``stopped``; ``last_reason`` is the reason in full. Nullable: schedules that never fired, and
firings before this migration, have none.

``content_owners.owner`` grows to 64 characters: a batch (whose id is a sha256) owns the team
template its rows carry. SQLite does not enforce a ``VARCHAR`` length, so only PostgreSQL's column
changes (widening a ``varchar`` there rewrites nothing).

Revision ID: team_files
Revises: judge_stats
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "team_files"
down_revision: str | None = "judge_stats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("schedules") as batch:
        batch.add_column(sa.Column("last_status", sa.String(16), nullable=True))
        batch.add_column(sa.Column("last_reason", sa.Text(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("content_owners", "owner", type_=sa.String(64), existing_nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("content_owners", "owner", type_=sa.String(32), existing_nullable=False)
    with op.batch_alter_table("schedules") as batch:
        batch.drop_column("last_reason")
        batch.drop_column("last_status")
