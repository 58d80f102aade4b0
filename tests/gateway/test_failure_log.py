"""A periodic job that keeps failing is told once in full, then a line a minute, and once
when it works again (gateway/failure_log.py) — the scheduler's jobs (budget sweeper, live
sharing, trace spool, guard, purge) and the snapshot check all tell their failures so."""

from __future__ import annotations

import logging

from gateway.failure_log import RepeatedFailure

log = logging.getLogger("tests.failure_log")


def test_ten_minutes_of_failures_every_two_seconds_are_a_dozen_lines(caplog):
    # given a job that fails every 2 s for ten minutes, then works
    clock = {"now": 0.0}
    failures = RepeatedFailure(log, "sharing live metrics", clock=lambda: clock["now"])
    with caplog.at_level(logging.INFO, logger="tests.failure_log"):
        for _ in range(300):
            try:
                raise ConnectionError("Redis away")
            except ConnectionError as error:
                failures.failed(error, level=logging.WARNING)
            clock["now"] += 2.0
        failures.worked()
        failures.worked()  # a second success says nothing more
    # then: the first in full, one line a minute, one when it works again
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines[0] == ("WARNING", "sharing live metrics failed; retrying", True)
    assert lines[1:-1] == [
        ("WARNING", f"sharing live metrics failing for {s} s: ConnectionError", False)
        for s in range(60, 600, 60)
    ]
    assert lines[-1] == ("WARNING", "sharing live metrics works again after 600 s", False)
    assert not failures.failing


def test_a_new_failure_after_recovery_is_told_in_full_again(caplog):
    clock = {"now": 0.0}
    failures = RepeatedFailure(log, "sweeping budget reservations", clock=lambda: clock["now"])
    with caplog.at_level(logging.INFO, logger="tests.failure_log"):
        failures.failed(RuntimeError("one"))
        failures.worked()
        clock["now"] = 5.0
        failures.failed(RuntimeError("two"))
    full = [r for r in caplog.records if r.exc_info is not None]
    assert [str(r.exc_info[1]) for r in full] == ["one", "two"]
    assert failures.failing
