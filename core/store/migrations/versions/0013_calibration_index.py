"""calibration_index: the indexes judge calibration reads by

Calibration picks out overridden attempts (``analyst_verdict_recorded``), blind and second
judgements and citation marks by ``events.kind``: without an index each of those read every event
of the workspace, agent events included (millions in a busy one). It also picks out attempts
decided more than once by grouping ``feedback`` on ``attempt_id``: with an index that is a walk
down it rather than a sort of every feedback row.

Revision ID: calibration_index
Revises: team_files
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "calibration_index"
down_revision: str | None = "team_files"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_events_kind", "events", ["kind"])
    op.create_index("ix_feedback_attempt_id", "feedback", ["attempt_id"])


def downgrade() -> None:
    op.drop_index("ix_feedback_attempt_id", table_name="feedback")
    op.drop_index("ix_events_kind", table_name="events")
