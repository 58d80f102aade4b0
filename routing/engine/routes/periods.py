"""Calendar periods of rate and budget nodes (CONFIG.md: "Periods reset at calendar boundaries
in UTC"): where the current period starts and ends, and how long until it resets — the
`Retry-After` of a route's 429 (SPEC D-27). `now` is passed in (epoch seconds); nothing here
reads the clock. Pure.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

PERIODS = ("minute", "hour", "daily", "weekly", "monthly")


def period_bounds(period: str, now: float) -> tuple[float, float]:
    """(start, end) in epoch seconds of the UTC calendar period holding `now`: the minute,
    the hour, the day from 00:00, the ISO week from Monday 00:00, the month from the 1st
    00:00. `now` exactly on a boundary belongs to the period that starts there."""
    at = datetime.fromtimestamp(now, tz=UTC)
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "minute":
        start = at.replace(second=0, microsecond=0)
        end = start + timedelta(minutes=1)
    elif period == "hour":
        start = at.replace(minute=0, second=0, microsecond=0)
        end = start + timedelta(hours=1)
    elif period == "daily":
        start, end = day, day + timedelta(days=1)
    elif period == "weekly":
        start = day - timedelta(days=day.weekday())  # Monday is 0
        end = start + timedelta(days=7)
    elif period == "monthly":
        start = day.replace(day=1)
        # Months differ in length: step to the 1st of the next month by year and month.
        end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    else:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}, got {period!r}")
    return start.timestamp(), end.timestamp()


def seconds_until_reset(period: str, now: float) -> int:
    """Whole seconds until `period` next resets, rounded up and at least 1, so a client
    that waits this long is in the next period (D-27's Retry-After)."""
    _start, end = period_bounds(period, now)
    return max(1, math.ceil(end - now))
