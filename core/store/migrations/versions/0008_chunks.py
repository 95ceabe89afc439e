"""evidence as content: content-addressed chunks instead of one big value

Large tool results and node outputs are split into chunks of bounded size, each stored once under
the sha256 of its bytes; a content object lists its chunks in order, so no value ever approaches
SQLite's 1e9-byte limit and a repeated result costs one set of chunks. ``content_owners`` says which
task (or, for work outside a task, which session) holds a content object: objects are swept only
when no owner is left. Old rows keep their inline text: nothing is rewritten.

Revision ID: 0008_chunks
Revises: 0007_claims
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_chunks"
down_revision: str | None = "0007_claims"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "content_chunks",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("codec", sa.String(8), nullable=False, server_default=""),
        sa.Column("n_chars", sa.Integer(), nullable=False),
        sa.Column("n_bytes", sa.Integer(), nullable=False),
        sa.Column("token_counts", sa.JSON(), nullable=True),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "content_objects",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("n_chars", sa.BigInteger(), nullable=False),
        sa.Column("n_bytes", sa.BigInteger(), nullable=False),
        sa.Column("n_chunks", sa.Integer(), nullable=False),
    )
    op.create_table(
        "content_parts",
        sa.Column(
            "content_sha",
            sa.String(64),
            sa.ForeignKey("content_objects.sha256", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("idx", sa.Integer(), primary_key=True),
        sa.Column("chunk_sha", sa.String(64), nullable=False),
        sa.Column("char_start", sa.BigInteger(), nullable=False),
        sa.Column("n_chars", sa.Integer(), nullable=False),
    )
    op.create_index("ix_content_parts_chunk", "content_parts", ["chunk_sha"])
    op.create_table(
        "content_owners",
        sa.Column("owner", sa.String(32), primary_key=True),
        sa.Column("content_sha", sa.String(64), primary_key=True),
    )
    op.create_index("ix_content_owners_content", "content_owners", ["content_sha"])


def downgrade() -> None:
    op.drop_index("ix_content_owners_content", table_name="content_owners")
    op.drop_table("content_owners")
    op.drop_index("ix_content_parts_chunk", table_name="content_parts")
    op.drop_table("content_parts")
    op.drop_table("content_objects")
    op.drop_table("content_chunks")
