"""announce task writes with NOTIFY (PostgreSQL)

Desks on one PostgreSQL workspace learn of each other's changes by ``LISTEN``ing on
``evidence_desk_tasks`` (``core/store/watch.py``). A trigger, rather than a ``NOTIFY`` beside each
write in the store, so no writer (a worker, the command line, an older desk's code path) can
forget to announce. The payload is the task's id, status and version: enough for a desk to
refresh one row and to drop an older notice arriving late. NOTIFY is delivered at commit, so a
rolled-back write announces nothing. SQLite has no NOTIFY; its desks watch ``PRAGMA data_version``.

Revision ID: 0006_notify
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006_notify"
down_revision: str | None = "0004_team_work"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """CREATE OR REPLACE FUNCTION evidence_desk_notify_task() RETURNS trigger AS $$
        BEGIN
          PERFORM pg_notify('evidence_desk_tasks',
            json_build_object('id', NEW.id, 'status', NEW.status, 'version', NEW.version)::text);
          RETURN NULL;
        END $$ LANGUAGE plpgsql"""
    )
    op.execute(
        "CREATE TRIGGER tasks_notify AFTER INSERT OR UPDATE ON tasks "
        "FOR EACH ROW EXECUTE FUNCTION evidence_desk_notify_task()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS tasks_notify ON tasks")
    op.execute("DROP FUNCTION IF EXISTS evidence_desk_notify_task()")
