"""queue counts table; PostgreSQL task text search index

The desk's group headers showed ``COUNT(*) ... GROUP BY status`` re-run on every live update
(79 ms at 1M tasks). ``task_counts`` keeps the number of tasks per (status, validation outcome),
maintained by triggers in the same transaction as every insert, status or outcome change and
delete, whichever code path writes (the store, a bulk import, a manual fix in a SQL shell). The
outcome is part of the key so the status and outcome pickers are answered from this table too;
a NULL outcome is stored as ''.

PostgreSQL gets the text index SQLite got in 0002: a generated ``tsvector`` column over title
and text with a GIN index, so the queue filter answers from an index there as well.

On PostgreSQL the counts are maintained by statement-level triggers with transition tables: a
bulk insert of a million rows updates at most a few dozen counts rows once, and the deltas are
applied in key order, so concurrent writers lock counts rows in one order and cannot deadlock.

Revision ID: 0003_queue_counts
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_queue_counts"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_TRIGGERS = [
    """CREATE TRIGGER task_counts_ai AFTER INSERT ON tasks BEGIN
         INSERT OR IGNORE INTO task_counts(status, outcome, n)
           VALUES (new.status, coalesce(new.validation_outcome, ''), 0);
         UPDATE task_counts SET n = n + 1
           WHERE status = new.status AND outcome = coalesce(new.validation_outcome, '');
       END""",
    """CREATE TRIGGER task_counts_ad AFTER DELETE ON tasks BEGIN
         UPDATE task_counts SET n = n - 1
           WHERE status = old.status AND outcome = coalesce(old.validation_outcome, '');
       END""",
    """CREATE TRIGGER task_counts_au AFTER UPDATE OF status, validation_outcome ON tasks
       WHEN old.status IS NOT new.status OR old.validation_outcome IS NOT new.validation_outcome
       BEGIN
         UPDATE task_counts SET n = n - 1
           WHERE status = old.status AND outcome = coalesce(old.validation_outcome, '');
         INSERT OR IGNORE INTO task_counts(status, outcome, n)
           VALUES (new.status, coalesce(new.validation_outcome, ''), 0);
         UPDATE task_counts SET n = n + 1
           WHERE status = new.status AND outcome = coalesce(new.validation_outcome, '');
       END""",
]

_PG_FUNCTION = """
CREATE FUNCTION task_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO task_counts(status, outcome, n)
      SELECT status, coalesce(validation_outcome, ''), count(*) FROM new_rows
      GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (status, outcome) DO UPDATE SET n = task_counts.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO task_counts(status, outcome, n)
      SELECT status, coalesce(validation_outcome, ''), -count(*) FROM old_rows
      GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (status, outcome) DO UPDATE SET n = task_counts.n + excluded.n;
  ELSE
    INSERT INTO task_counts(status, outcome, n)
      SELECT status, outcome, sum(d) FROM (
        SELECT status, coalesce(validation_outcome, '') AS outcome, -1 AS d FROM old_rows
        UNION ALL
        SELECT status, coalesce(validation_outcome, ''), 1 FROM new_rows
      ) AS moves
      GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
      ON CONFLICT (status, outcome) DO UPDATE SET n = task_counts.n + excluded.n;
  END IF;
  RETURN NULL;
END $$
"""

_PG_TRIGGERS = [
    """CREATE TRIGGER task_counts_ai AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION task_counts_apply()""",
    """CREATE TRIGGER task_counts_ad AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows
       FOR EACH STATEMENT EXECUTE FUNCTION task_counts_apply()""",
    """CREATE TRIGGER task_counts_au AFTER UPDATE ON tasks
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION task_counts_apply()""",
]


def upgrade() -> None:
    op.create_table(
        "task_counts",
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False, server_default=""),
        sa.Column("n", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("status", "outcome", name="pk_task_counts"),
    )
    op.execute(
        "INSERT INTO task_counts(status, outcome, n) "
        "SELECT status, coalesce(validation_outcome, ''), count(*) FROM tasks GROUP BY 1, 2"
    )
    if op.get_bind().dialect.name == "sqlite":
        for trigger in _SQLITE_TRIGGERS:
            op.execute(trigger)
        return
    op.execute(_PG_FUNCTION)
    for trigger in _PG_TRIGGERS:
        op.execute(trigger)
    op.execute(
        "ALTER TABLE tasks ADD COLUMN search tsvector GENERATED ALWAYS AS "
        "(to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(text, ''))) STORED"
    )
    op.execute("CREATE INDEX ix_tasks_search ON tasks USING gin (search)")


def downgrade() -> None:
    for name in ("task_counts_ai", "task_counts_ad", "task_counts_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + ("" if _sqlite() else " ON tasks"))
    if not _sqlite():
        op.execute("DROP FUNCTION IF EXISTS task_counts_apply()")
        op.execute("DROP INDEX IF EXISTS ix_tasks_search")
        op.execute("ALTER TABLE tasks DROP COLUMN IF EXISTS search")
    op.drop_table("task_counts")


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"
