"""The in-process counters route rate and budget nodes read (gateway/state/key_usage.py):
per key and calendar period, restarting when a request falls in a later period."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.state.key_usage import KeyUsage

MONDAY_NOON = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC).timestamp()


def test_usage_counts_requests_and_cost_per_period_and_key() -> None:
    # given
    usage = KeyUsage()
    usage.add(1, MONDAY_NOON, 5)
    usage.add(1, MONDAY_NOON + 10, 7)
    usage.add(2, MONDAY_NOON, 100)
    # when
    seen = usage.of(1, MONDAY_NOON + 20)
    # then
    assert [seen.requests(p) for p in ("minute", "hour", "daily", "weekly", "monthly")] == [2] * 5
    assert seen.cost_micros("daily") == 12
    assert usage.of(3, MONDAY_NOON).requests("daily") == 0


def test_a_later_period_starts_from_zero_while_longer_ones_go_on() -> None:
    # given two requests in the minute of noon
    usage = KeyUsage()
    usage.add(1, MONDAY_NOON, 5)
    usage.add(1, MONDAY_NOON + 1, 5)
    # when read, then added to, a minute later
    later = MONDAY_NOON + 60
    assert usage.of(1, later).requests("minute") == 0
    usage.add(1, later, 1)
    # then
    seen = usage.of(1, later)
    assert (seen.requests("minute"), seen.requests("hour"), seen.cost_micros("daily")) == (1, 3, 11)


def test_the_trace_keeps_every_period_of_the_view() -> None:
    usage = KeyUsage()
    usage.add(1, MONDAY_NOON, 5)
    assert usage.of(1, MONDAY_NOON + 60).as_json() == {
        "minute": [0, 0], "hour": [1, 5], "daily": [1, 5], "weekly": [1, 5], "monthly": [1, 5],
    }  # fmt: skip
