"""When a recurring task fires next: a cron expression's next match, or a fixed interval.

Pure time arithmetic, so both the worker that fires schedules and the read side that shows the
next firing (``core.tasks.team_views``) use it without the one importing the other.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.errors import ConfigurationError


def next_run(cron: str | None, interval_s: int | None, after: datetime) -> datetime:
    """The firing after ``after``: the cron expression's next match, or ``after`` plus the interval."""
    if cron:
        from croniter import croniter

        return croniter(cron, after).get_next(datetime).astimezone(UTC)  # type: ignore[no-any-return]
    if interval_s:
        return after + timedelta(seconds=interval_s)
    raise ConfigurationError("a schedule needs a cron expression or an interval")


def check_cron(cron: str) -> None:
    from croniter import croniter

    if not croniter.is_valid(cron):
        raise ConfigurationError(f"not a cron expression: {cron!r} (five fields, e.g. '*/30 * * * *')")
