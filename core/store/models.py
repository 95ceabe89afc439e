"""SQLAlchemy tables. Schema changes go through alembic migrations, never ``create_all``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only autoincrements INTEGER PRIMARY KEY; PostgreSQL wants BIGINT for an unbounded log.
BigIntPK = BigInteger().with_variant(Integer(), "sqlite")


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, datetime: DateTime(timezone=True)}


class TaskRow(Base):
    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(32))
    validation_outcome: Mapped[str | None] = mapped_column(String(32))
    team_spec: Mapped[str | None] = mapped_column(Text)
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    main_session_id: Mapped[str | None] = mapped_column(String(32))
    attempt_count: Mapped[int] = mapped_column(Integer, default=0)
    latest_validation_status: Mapped[str | None] = mapped_column(String(32))
    latest_score: Mapped[float | None] = mapped_column(Float)
    latest_category: Mapped[str | None] = mapped_column(String(32))
    revision_requested_by: Mapped[str | None] = mapped_column(String(16))
    read_only: Mapped[bool] = mapped_column(Boolean, default=False)
    origin: Mapped[str | None] = mapped_column(String(200))
    # Which process runs the task ("host:pid") and when it last said so: crash recovery only
    # takes over tasks whose runner is provably gone.
    runner: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column()
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Batch tasks (migration 0004): the batch and the row key are unique together, so re-running
    # a batch file never queues a row twice; metadata and a given answer travel with the row.
    batch_id: Mapped[str | None] = mapped_column(String(64))
    batch_key: Mapped[str | None] = mapped_column(String(200))
    task_metadata: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    given_answer: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("ix_tasks_status_updated", "status", "updated_at"),
        Index("uq_tasks_batch_key", "batch_id", "batch_key", unique=True),
    )


class TaskCountRow(Base):
    """Tasks per (status, outcome; '' for none), kept by triggers in every writing transaction.

    The queue's group headers read these few rows instead of counting the tasks table (see
    migration 0003_queue_counts); a PostgreSQL ``tasks.search`` tsvector column, used by the
    queue filter, is created by that migration too and left unmapped (SQLite has none).
    """

    __tablename__ = "task_counts"

    status: Mapped[str] = mapped_column(String(32), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(32), primary_key=True, server_default="")
    n: Mapped[int] = mapped_column(BigInteger, server_default="0")


class AttemptRow(Base):
    __tablename__ = "attempts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    trigger: Mapped[str] = mapped_column(String(32))
    prompt: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default="running")
    finish_reason: Mapped[str | None] = mapped_column(String(64))
    final_output: Mapped[str | None] = mapped_column(Text)
    final_output_ref: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # big: in chunks (0012)
    validation_status: Mapped[str | None] = mapped_column(String(32))
    validation_score: Mapped[float | None] = mapped_column(Float)
    validation_outcome: Mapped[str | None] = mapped_column(String(32))
    packet: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column()

    __table_args__ = (UniqueConstraint("task_id", "index", name="uq_attempts_task_index"),)


class SessionRow(Base):
    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    task_id: Mapped[str | None] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    parent_session_id: Mapped[str | None] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))
    label: Mapped[str] = mapped_column(String(200), default="")
    # Next per-session sequence number; bumped with UPDATE ... RETURNING in the same transaction
    # as the event insert, so seq stays contiguous across coroutines and processes.
    next_seq: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    task_id: Mapped[str | None] = mapped_column(String(32), index=True)
    attempt_id: Mapped[str | None] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))
    node_id: Mapped[str | None] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16), default="running")
    finish_reason: Mapped[str | None] = mapped_column(String(64))
    output_text: Mapped[str | None] = mapped_column(Text)
    output_text_ref: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # big: in chunks (0012)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column()


class EventRow(Base):
    __tablename__ = "events"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(String(32))
    task_id: Mapped[str | None] = mapped_column(String(32), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(64), index=True)  # calibration reads by kind (0013)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    content: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (
        UniqueConstraint("session_id", "seq", name="uq_events_session_seq"),
        Index("ix_events_session_run", "session_id", "run_id", "seq"),
    )


class ValidationRow(Base):
    __tablename__ = "validations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    attempt_id: Mapped[str] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), index=True)
    attempt_index: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))
    score: Mapped[float] = mapped_column(Float)
    category: Mapped[str] = mapped_column(String(32))
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    raw_response: Mapped[str] = mapped_column(Text, default="")
    prompt: Mapped[str | None] = mapped_column(Text)
    prompt_ref: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # big: in chunks (0012)
    debug: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class FeedbackRow(Base):
    __tablename__ = "feedback"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    attempt_id: Mapped[str | None] = mapped_column(String(32), index=True)  # migration 0013
    action: Mapped[str] = mapped_column(String(16))
    prompt: Mapped[str | None] = mapped_column(Text)
    note: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(String(32))  # a reason code (migration judge_stats)
    reviewer: Mapped[str] = mapped_column(String(200))
    from_status: Mapped[str] = mapped_column(String(32))
    to_status: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class BatchRow(Base):
    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source: Mapped[str] = mapped_column(String(500))
    row_count: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ScheduleRow(Base):
    """A recurring task: each firing is a new attempt in the task's own session."""

    __tablename__ = "schedules"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), index=True)
    cron: Mapped[str | None] = mapped_column(String(200))
    interval_s: Mapped[int | None] = mapped_column(Integer)
    checklist: Mapped[str | None] = mapped_column(Text)
    verify_heartbeat: Mapped[bool] = mapped_column(Boolean, default=False)
    next_run_at: Mapped[datetime] = mapped_column(index=True)
    last_run_at: Mapped[datetime | None] = mapped_column()
    last_verdict: Mapped[str | None] = mapped_column(String(64))
    # The last firing's outcome and its reason in full (migration team_files): a failed firing
    # says why, where ``last_verdict`` only held what a firing that ran concluded.
    last_status: Mapped[str | None] = mapped_column(String(16))
    last_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ClaimRow(Base):
    """A reviewer's lease on a task (migration 0007_claims); an expired row counts as no claim."""

    __tablename__ = "claims"

    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    reviewer: Mapped[str] = mapped_column(String(200))
    claimed_at: Mapped[datetime] = mapped_column()
    expires_at: Mapped[datetime] = mapped_column()

    __table_args__ = (Index("ix_claims_reviewer_expires", "reviewer", "expires_at"),)


class ContentChunkRow(Base):
    """One chunk of evidence text (migration 0008_chunks), stored once under its bytes' sha256.

    ``token_counts`` caches the chunk's token count per tokenizer model, so chunk planning counts
    each chunk once in its life instead of re-tokenising a whole packet per plan.
    """

    __tablename__ = "content_chunks"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    codec: Mapped[str] = mapped_column(String(8), server_default="")
    n_chars: Mapped[int] = mapped_column(Integer)
    n_bytes: Mapped[int] = mapped_column(Integer)
    token_counts: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class ContentObjectRow(Base):
    """A whole text (a tool result, a node output) as an ordered list of chunks."""

    __tablename__ = "content_objects"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    n_chars: Mapped[int] = mapped_column(BigInteger)
    n_bytes: Mapped[int] = mapped_column(BigInteger)
    n_chunks: Mapped[int] = mapped_column(Integer)


class ContentPartRow(Base):
    __tablename__ = "content_parts"

    content_sha: Mapped[str] = mapped_column(
        ForeignKey("content_objects.sha256", ondelete="CASCADE"), primary_key=True
    )
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    chunk_sha: Mapped[str] = mapped_column(String(64))
    char_start: Mapped[int] = mapped_column(BigInteger)
    n_chars: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_content_parts_chunk", "chunk_sha"),)


class ContentOwnerRow(Base):
    """Who holds a content object: a task id, a session id for work outside any task, or a batch id
    (the team template its rows carry; migration team_files widened the column for it)."""

    __tablename__ = "content_owners"

    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    content_sha: Mapped[str] = mapped_column(String(64), primary_key=True)

    __table_args__ = (Index("ix_content_owners_content", "content_sha"),)


class SearchDocRow(Base):
    """One searchable passage (migration 0009_search): a title, task text, an answer, an evidence
    segment, a validator issue or a note. SQLite indexes ``body`` in the FTS5 table ``search_fts``;
    PostgreSQL in an unmapped generated ``tsv`` column with GIN."""

    __tablename__ = "search_docs"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    attempt_index: Mapped[int | None] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    ref: Mapped[str] = mapped_column(String(200), default="")
    seg: Mapped[int] = mapped_column(Integer, default=0)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime | None] = mapped_column()

    __table_args__ = (Index("ix_search_docs_task", "task_id", "attempt_index", "kind"),)


class SearchMetaRow(Base):
    __tablename__ = "search_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))


class SavedViewRow(Base):
    """A named search (query and filters) kept in the workspace, shared by everyone using it."""

    __tablename__ = "saved_views"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class PresenceRow(Base):
    """A reviewer looking at a task (migration 0010_presence); a short lease, renewed while shown."""

    __tablename__ = "presence"

    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    reviewer: Mapped[str] = mapped_column(String(200), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column()
    expires_at: Mapped[datetime] = mapped_column()

    __table_args__ = (Index("ix_presence_expires", "expires_at"),)
