"""When a recurring task fires next: a cron expression's next match, or a fixed interval.

Pure time arithmetic, so both the worker that fires schedules and the read side that shows the
next firing (``core.tasks.team_views``) use it without the one importing the other.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import ConfigurationError


def next_run(
    cron: str | None, interval_s: int | None, after: datetime, zone: tzinfo | None = None
) -> datetime:
    """The firing after ``after``: the cron expression's next match, or ``after`` plus the interval.

    A cron expression is read in ``zone`` (``cron_zone``: the ``cron_timezone`` setting, else the
    machine's zone): "0 9 * * *" is nine o'clock there, daylight saving included, returned in UTC.
    """
    if cron:
        from croniter import croniter

        start = after.astimezone(zone if zone is not None else cron_zone(None))
        return croniter(cron, start).get_next(datetime).astimezone(UTC)  # type: ignore[no-any-return]
    if interval_s:
        return after + timedelta(seconds=interval_s)
    raise ConfigurationError("a schedule needs a cron expression or an interval")


def next_due(
    cron: str | None, interval_s: int | None, due: datetime, now: datetime, zone: tzinfo | None = None
) -> datetime:
    """The firing after the one due at ``due``, on the schedule's own grid, and later than ``now``.

    Counted from the due time, never from when the firing was claimed or finished: ``--every 15``
    polled every 5 s would otherwise drift to about every 20 s. A schedule that missed firings
    (no worker ran) skips to its next point after ``now`` instead of firing once per miss.
    """
    if cron:
        return next_run(cron, None, max(due, now), zone)
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


def cron_zone(name: str | None) -> tzinfo:
    """The zone cron expressions are read in: ``name`` (an IANA zone), else the machine's own.

    The machine's zone is taken with its daylight-saving rules (``TZ``, then ``/etc/localtime``);
    only where neither names one does it fall back to the current UTC offset.
    """
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(
                f"cron_timezone: unknown time zone {name!r} (an IANA name, e.g. 'Europe/Berlin' or 'UTC')"
            ) from None
    configured = os.environ.get("TZ", "").lstrip(":")
    if configured:
        try:
            return ZoneInfo(configured)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    localtime = Path("/etc/localtime")
    try:
        with localtime.open("rb") as data:
            return ZoneInfo.from_file(data, key="localtime")
    except (OSError, ValueError):
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
