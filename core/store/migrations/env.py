"""Alembic environment: runs on the connection the store hands over (never opens its own)."""

from __future__ import annotations

from alembic import context

from core.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by the alembic command line
    raise RuntimeError("run migrations through core.store (Store.open), not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
