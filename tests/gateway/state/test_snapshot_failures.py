"""A configuration snapshot whose checks keep failing (the database away) is logged once in
full, then a line a minute, and one line when checks work again — not a traceback every
poll (a poll is every second, 0.1 s in tests)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest
from django.db import OperationalError

from gateway.state import snapshot
from gateway.state.snapshot import SnapshotHolder


def test_failing_snapshot_checks_log_once_then_a_line_a_minute(monkeypatch, caplog):
    up = {"now": False}

    def read_version() -> str:
        if not up["now"]:
            raise OperationalError("connection refused")
        return "v1"

    monkeypatch.setattr(snapshot, "read_version", read_version)
    monkeypatch.setattr(snapshot, "load_snapshot", lambda: pytest.fail("no reload expected"))
    clock = {"now": 1000.0}
    # the module's clock and database thread only: the event loop keeps the real ones,
    # and no database connection another test left in that thread is touched
    monkeypatch.setattr(snapshot, "time", SimpleNamespace(monotonic=lambda: clock["now"]))

    def in_thread(func):
        async def call(*args):
            return func(*args)

        return call

    monkeypatch.setattr(snapshot, "in_db_thread", in_thread)
    holder = SnapshotHolder(poll_s=0.1)
    holder._snapshot = type("Snap", (), {"version": "v1"})()  # the last snapshot loaded

    async def polls(count: int) -> None:
        for _ in range(count):
            await holder._check()
            clock["now"] += 0.125  # exact in binary: the minute lines fall where counted

    with caplog.at_level(logging.INFO, logger="gateway.state.snapshot"):
        asyncio.run(polls(960))  # two minutes of a database away, a poll each 0.125 s
        up["now"] = True
        asyncio.run(polls(3))
    records = [r for r in caplog.records if r.name == "gateway.state.snapshot"]
    assert [r.levelname for r in records] == ["ERROR", "ERROR", "WARNING"]  # at 0 s and 60 s
    assert records[0].exc_info is not None  # the first in full
    assert all(r.exc_info is None for r in records[1:])
    assert records[0].getMessage() == "configuration snapshot check failed; retrying"
    assert (
        records[1].getMessage() == "configuration snapshot check failing for 60 s: OperationalError"
    )
    assert records[-1].getMessage() == "configuration snapshot check works again after 120 s"
