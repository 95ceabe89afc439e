"""task text search index (SQLite)

The desk filters the queue on every keystroke; ``LIKE '%text%'`` scans every task's title and
text (~150 ms for a count and a page on 100k tasks). A trigram FTS5 index answers the same
substring question from an index. It keeps its own copy of the text keyed by task id (not an
external-content table over ``tasks.rowid``, which VACUUM may renumber). SQLite only:
PostgreSQL keeps ILIKE. An SQLite without the trigram tokenizer (older than 3.34) gets no index,
and the store falls back to LIKE.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op
from sqlalchemy.exc import OperationalError

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRIGGERS = [
    """CREATE TRIGGER tasks_fts_ai AFTER INSERT ON tasks BEGIN
         INSERT INTO tasks_fts(task_id, title, text) VALUES (new.id, new.title, new.text);
       END""",
    """CREATE TRIGGER tasks_fts_ad AFTER DELETE ON tasks BEGIN
         DELETE FROM tasks_fts WHERE task_id = old.id;
       END""",
    """CREATE TRIGGER tasks_fts_au AFTER UPDATE OF title, text ON tasks BEGIN
         DELETE FROM tasks_fts WHERE task_id = old.id;
         INSERT INTO tasks_fts(task_id, title, text) VALUES (new.id, new.title, new.text);
       END""",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    try:
        op.execute("CREATE VIRTUAL TABLE tasks_fts USING fts5(task_id UNINDEXED, title, text, tokenize='trigram')")
    except OperationalError:
        return  # no trigram tokenizer in this SQLite: the store filters with LIKE
    for trigger in TRIGGERS:
        op.execute(trigger)
    op.execute("INSERT INTO tasks_fts(task_id, title, text) SELECT id, title, text FROM tasks")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in ("tasks_fts_ai", "tasks_fts_ad", "tasks_fts_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS tasks_fts")
