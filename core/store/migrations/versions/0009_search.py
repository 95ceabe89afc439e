"""search everywhere: one full-text index over titles, task text, answers, evidence, issues, notes

``search_docs`` holds one row per searchable passage: (task, attempt, kind, ref, segment, body).
Large evidence items are split into 64 KiB segments so a hit names the passage it is in, and so
no PostgreSQL ``tsvector`` approaches its 1 MB limit. Titles and task text are kept by triggers
(every code path that writes a task, bulk imports included); answers, evidence, validator issues
and notes are written by ``core.search.index`` in the same transaction as what they index.

SQLite: ``search_fts`` is an FTS5 table over ``search_docs.body`` (external content, keyed by the
integer id, which VACUUM never renumbers), kept in step by triggers; ``unicode61`` words, not
trigrams, because the index covers evidence (a trigram index is several times the text's size).
PostgreSQL: a generated ``tsvector`` column with a GIN index.

Existing workspaces: titles and text are indexed here, in SQL; the rest needs the packets parsed,
so the migration leaves a ``search_meta`` row ``backfill = pending`` and the first search (or
``evidence-desk search --reindex``) indexes every stored attempt, then deletes the row.

``saved_views`` keeps named searches in the workspace, so a team on PostgreSQL shares them and a
copied workspace keeps its views.

Revision ID: 0009_search
Revises: 0008_chunks
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_search"
down_revision: str | None = "0008_chunks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE = [
    "CREATE VIRTUAL TABLE search_fts USING fts5(body, content='search_docs', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    """CREATE TRIGGER search_docs_ai AFTER INSERT ON search_docs BEGIN
         INSERT INTO search_fts(rowid, body) VALUES (new.id, new.body);
       END""",
    """CREATE TRIGGER search_docs_ad AFTER DELETE ON search_docs BEGIN
         INSERT INTO search_fts(search_fts, rowid, body) VALUES ('delete', old.id, old.body);
       END""",
    """CREATE TRIGGER search_docs_au AFTER UPDATE ON search_docs BEGIN
         INSERT INTO search_fts(search_fts, rowid, body) VALUES ('delete', old.id, old.body);
         INSERT INTO search_fts(rowid, body) VALUES (new.id, new.body);
       END""",
    """CREATE TRIGGER search_tasks_ai AFTER INSERT ON tasks BEGIN
         INSERT INTO search_docs(task_id, kind, ref, seg, body, created_at)
           VALUES (new.id, 'title', '', 0, new.title, new.created_at),
                  (new.id, 'text', '', 0, new.text, new.created_at);
       END""",
    """CREATE TRIGGER search_tasks_au AFTER UPDATE OF title, text ON tasks BEGIN
         DELETE FROM search_docs WHERE task_id = old.id AND kind IN ('title', 'text');
         INSERT INTO search_docs(task_id, kind, ref, seg, body, created_at)
           VALUES (new.id, 'title', '', 0, new.title, new.created_at),
                  (new.id, 'text', '', 0, new.text, new.created_at);
       END""",
]

# PostgreSQL: task text is cut into the same 64 KiB segments as evidence (a tsvector holds 1 MB).
_PG_TASK_DOCS = """
    INSERT INTO search_docs(task_id, kind, ref, seg, body, created_at)
    SELECT t.id, 'title', '', 0, t.title, t.created_at FROM {rows} AS t
    UNION ALL
    SELECT t.id, 'text', '', g, substr(t.text, g * 65536 + 1, 65536), t.created_at
      FROM {rows} AS t, generate_series(0, greatest(0, (length(t.text) - 1) / 65536)) AS g
"""

_PG = [
    "ALTER TABLE search_docs ADD COLUMN tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED",
    "CREATE INDEX ix_search_docs_tsv ON search_docs USING gin (tsv)",
    f"""CREATE FUNCTION search_tasks_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'UPDATE' THEN
        DELETE FROM search_docs d USING new_rows n
          WHERE d.task_id = n.id AND d.kind IN ('title', 'text');
      END IF;
      {_PG_TASK_DOCS.format(rows="new_rows")};
      RETURN NULL;
    END $$""",
    """CREATE TRIGGER search_tasks_ai AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION search_tasks_apply()""",
    """CREATE FUNCTION search_tasks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF new.title IS DISTINCT FROM old.title OR new.text IS DISTINCT FROM old.text THEN
        DELETE FROM search_docs WHERE task_id = new.id AND kind IN ('title', 'text');
        INSERT INTO search_docs(task_id, kind, ref, seg, body, created_at)
          SELECT new.id, 'title', '', 0, new.title, new.created_at
          UNION ALL
          SELECT new.id, 'text', '', g, substr(new.text, g * 65536 + 1, 65536), new.created_at
            FROM generate_series(0, greatest(0, (length(new.text) - 1) / 65536)) AS g;
      END IF;
      RETURN NULL;
    END $$""",
    """CREATE TRIGGER search_tasks_au AFTER UPDATE OF title, text ON tasks
       FOR EACH ROW EXECUTE FUNCTION search_tasks_changed()""",
]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.create_table(
        "search_docs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.String(32), sa.ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("attempt_index", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(200), nullable=False, server_default=""),
        sa.Column("seg", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_search_docs_task", "search_docs", ["task_id", "attempt_index", "kind"])
    op.create_table(
        "search_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(200), nullable=False),
    )
    op.create_table(
        "saved_views",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False, server_default=""),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    for statement in _SQLITE if sqlite else _PG:
        op.execute(statement)
    if sqlite:
        op.execute(
            "INSERT INTO search_docs(task_id, kind, ref, seg, body, created_at) "
            "SELECT id, 'title', '', 0, title, created_at FROM tasks "
            "UNION ALL SELECT id, 'text', '', 0, text, created_at FROM tasks"
        )
    else:
        op.execute(_PG_TASK_DOCS.format(rows="tasks"))
    op.execute(
        "INSERT INTO search_meta(key, value) SELECT 'backfill', 'pending' "
        "WHERE EXISTS (SELECT 1 FROM attempts) OR EXISTS (SELECT 1 FROM feedback)"
    )


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for name in ("search_tasks_ai", "search_tasks_au", "search_docs_ai", "search_docs_ad", "search_docs_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS search_fts")
    else:
        op.execute("DROP TRIGGER IF EXISTS search_tasks_ai ON tasks")
        op.execute("DROP TRIGGER IF EXISTS search_tasks_au ON tasks")
        op.execute("DROP FUNCTION IF EXISTS search_tasks_apply()")
        op.execute("DROP FUNCTION IF EXISTS search_tasks_changed()")
    op.drop_table("saved_views")
    op.drop_table("search_meta")
    op.drop_index("ix_search_docs_task", table_name="search_docs")
    op.drop_table("search_docs")
