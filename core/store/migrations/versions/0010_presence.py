"""presence: who is looking at a task right now, and claim/presence changes announced live

Presence is not a claim: several analysts may look at one task while only one holds it, and
looking must never refuse anyone. So it gets its own small table keyed by (task, reviewer),
with a short lease (``core/tasks/presence.py``) renewed while the task stays on screen, rather
than a "kind" column on ``claims``, whose one-row-per-task key is exactly what makes a claim
exclusive.

On PostgreSQL both ``claims`` and ``presence`` announce every insert, update and delete with
``NOTIFY evidence_desk_team`` carrying the task id, so another desk marks a claim, a release,
a take-over or a viewer within a second, without waiting for the task row itself to change.
Renewals (an update that keeps the reviewer) announce nothing: every open desk renews its
presence every few seconds, and nobody's view changes.
SQLite desks notice the same through the data-version watch (``core/store/watch.py``).

Revision ID: 0010_presence
Revises: 0009_search
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_presence"
down_revision: str | None = "0009_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRIGGERS = (("claims", "claims_notify"), ("presence", "presence_notify"))


def upgrade() -> None:
    op.create_table(
        "presence",
        sa.Column("task_id", sa.String(32), sa.ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("reviewer", sa.String(200), primary_key=True),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_presence_expires", "presence", ["expires_at"])
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """CREATE OR REPLACE FUNCTION evidence_desk_notify_team() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'DELETE' THEN
            PERFORM pg_notify('evidence_desk_team', OLD.task_id);
          ELSIF TG_OP = 'UPDATE' AND OLD.reviewer = NEW.reviewer THEN
            NULL;  -- a renewal: nobody's view changes, and desks renew every few seconds
          ELSE
            PERFORM pg_notify('evidence_desk_team', NEW.task_id);
          END IF;
          RETURN NULL;
        END $$ LANGUAGE plpgsql"""
    )
    for table, trigger in TRIGGERS:
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION evidence_desk_notify_team()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table, trigger in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}")
        op.execute("DROP FUNCTION IF EXISTS evidence_desk_notify_team()")
    op.drop_index("ix_presence_expires", table_name="presence")
    op.drop_table("presence")
