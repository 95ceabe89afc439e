"""Cron schedules are read in a named time zone (the ``cron_timezone`` setting, else the machine's).

"0 9 * * *" means nine o'clock where the team is, not in UTC: every instant here is computed from a
fixed "after", never from the clock, and compared with the UTC instant worked out by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from core.config import Settings
from core.domain.cadence import cron_zone, next_run
from core.errors import ConfigurationError
from core.store import Store
from core.store.schedules import ScheduleRepository
from core.tasks.team_views import TeamViews


def test_nine_oclock_in_a_named_zone_is_the_right_utc_instant_across_daylight_saving() -> None:
    new_york = ZoneInfo("America/New_York")
    # 2026-03-07 12:00 UTC is 07:00 EST: 09:00 EST that day is 14:00 UTC.
    first = next_run("0 9 * * *", None, datetime(2026, 3, 7, 12, 0, tzinfo=UTC), new_york)
    assert first == datetime(2026, 3, 7, 14, 0, tzinfo=UTC)
    # Clocks go forward on 2026-03-08: 09:00 EDT is 13:00 UTC.
    assert next_run("0 9 * * *", None, first, new_york) == datetime(2026, 3, 8, 13, 0, tzinfo=UTC)
    # Tokyo, 09:30 local already past nine: the next day's 09:00 JST, 00:00 UTC.
    tokyo = next_run("0 9 * * *", None, datetime(2026, 11, 26, 0, 30, tzinfo=UTC), ZoneInfo("Asia/Tokyo"))
    assert tokyo == datetime(2026, 11, 27, 0, 0, tzinfo=UTC)
    assert next_run("0 9 * * *", None, datetime(2026, 11, 26, 0, 30, tzinfo=UTC), UTC) == datetime(
        2026, 11, 26, 9, 0, tzinfo=UTC
    )


def test_without_the_setting_the_machines_zone_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    assert cron_zone(None) == ZoneInfo("Asia/Kolkata")
    # 09:00 IST is 03:30 UTC.
    assert next_run("0 9 * * *", None, datetime(2026, 11, 26, 0, 0, tzinfo=UTC)) == datetime(
        2026, 11, 26, 3, 30, tzinfo=UTC
    )
    assert cron_zone("Europe/Berlin") == ZoneInfo("Europe/Berlin")


def test_an_unknown_zone_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        Settings(cron_timezone="Mars/Olympus")
    with pytest.raises(ConfigurationError, match="cron_timezone: unknown time zone"):
        cron_zone("Mars/Olympus")
    assert Settings(cron_timezone="").cron_timezone is None


async def test_the_setting_reaches_the_schedules_next_run(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        task = await store.create_task("check the feeds", title="Heartbeat: feeds")
        await ScheduleRepository(store).add(
            task.id,
            cron="0 9 * * *",
            interval_s=None,
            checklist=None,
            verify_heartbeat=False,
            next_run_at=datetime(2026, 11, 25, 0, 0, tzinfo=UTC),
        )
        now = datetime(2026, 11, 26, 0, 30, tzinfo=UTC)  # overdue: shown with the next match after now
        [shown] = await TeamViews(store, clock=lambda: now, cron_timezone="Asia/Tokyo").schedules()
        assert shown.due and shown.next_run == datetime(2026, 11, 27, 0, 0, tzinfo=UTC)
    finally:
        await store.close()
