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


def next_due(cron: str | None, interval_s: int | None, due: datetime, now: datetime) -> datetime:
    """The firing after the one due at ``due``, on the schedule's own grid, and later than ``now``.

    Counted from the due time, never from when the firing was claimed or finished: ``--every 15``
    polled every 5 s would otherwise drift to about every 20 s. A schedule that missed firings
    (no worker ran) skips to its next point after ``now`` instead of firing once per miss.
    """
    if cron:
        return next_run(cron, None, max(due, now))
    if not interval_s:
        raise ConfigurationError("a schedule needs a cron expression or an interval")
    step = timedelta(seconds=interval_s)
    if now < due + step:
        return due + step
    return due + ((now - due) // step + 1) * step


def check_cron(cron: str) -> None:
    from croniter import croniter

    if not croniter.is_valid(cron):
        raise ConfigurationError(f"not a cron expression: {cron!r} (five fields, e.g. '*/30 * * * *')")
