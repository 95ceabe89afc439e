"""task text search index (SQLite)

The desk filters the queue on every keystroke; ``LIKE '%text%'`` scans every task's title and
text (~50 ms per query on 100k tasks, several queries per keystroke). A trigram FTS5 index
answers the same substring question from an index. SQLite only: PostgreSQL keeps ILIKE. An
SQLite without the trigram tokenizer (older than 3.34) simply gets no index, and the store falls
back to LIKE.

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
         INSERT INTO tasks_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
       END""",
    """CREATE TRIGGER tasks_fts_ad AFTER DELETE ON tasks BEGIN
         INSERT INTO tasks_fts(tasks_fts, rowid, title, text) VALUES ('delete', old.rowid, old.title, old.text);
       END""",
    """CREATE TRIGGER tasks_fts_au AFTER UPDATE OF title, text ON tasks BEGIN
         INSERT INTO tasks_fts(tasks_fts, rowid, title, text) VALUES ('delete', old.rowid, old.title, old.text);
         INSERT INTO tasks_fts(rowid, title, text) VALUES (new.rowid, new.title, new.text);
       END""",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    try:
        op.execute(
            "CREATE VIRTUAL TABLE tasks_fts USING fts5("
            "title, text, content='tasks', content_rowid='rowid', tokenize='trigram')"
        )
    except OperationalError:
        return  # no trigram tokenizer in this SQLite: the store filters with LIKE
    for trigger in TRIGGERS:
        op.execute(trigger)
    op.execute("INSERT INTO tasks_fts(tasks_fts) VALUES ('rebuild')")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name in ("tasks_fts_ai", "tasks_fts_ad", "tasks_fts_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.execute("DROP TABLE IF EXISTS tasks_fts")
