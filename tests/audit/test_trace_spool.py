"""The trace spool and the writer's outage handling (SPEC R-OBS-1), without a database:
the insert is replaced by a stand-in that is "down" on demand and stores rows by trace id,
as the real insert does (ON CONFLICT DO NOTHING)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from audit import record
from audit.record import TraceWriter
from audit.spool import TraceSpool


def _trace(n: int) -> dict[str, Any]:
    return {"id": uuid.uuid4(), "request_id": f"r{n}", "workspace_id": 1, "status_code": 200,
            "created_at": datetime(2026, 12, 1, 10, 0, n % 60, tzinfo=UTC),
            "parent_id": None, "decision": {"request": {"model": "m"}}}  # fmt: skip


class Database:
    """Stores rows by id; raises OperationalError while `down`."""

    def __init__(self) -> None:
        self.rows: dict[uuid.UUID, dict[str, Any]] = {}
        self.down = False
        self.inserts = 0

    def insert(self, batch: list[dict[str, Any]]) -> None:
        self.inserts += 1
        if self.down:
            raise OperationalError("connection refused")
        for row in batch:
            self.rows.setdefault(row["id"], row)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def database(monkeypatch: pytest.MonkeyPatch) -> Database:
    db = Database()
    monkeypatch.setattr(record, "insert", db.insert)
    return db


def _writer(spool: TraceSpool | None, clock: Clock) -> TraceWriter:
    def run_sync(func: Any) -> Any:
        async def call(*args: Any) -> Any:
            return func(*args)

        return call

    return TraceWriter(flush_s=60, run_sync=run_sync, spool=spool, clock=clock)


def test_a_spooled_batch_comes_back_whole_with_its_types(tmp_path: Path):
    spool = TraceSpool(tmp_path, max_bytes=1 << 20)
    batch = [_trace(1), {**_trace(2), "parent_id": uuid.uuid4()}]
    assert spool.put(batch)
    [(path, rows)] = list(spool.batches())
    assert rows == batch  # ids are UUIDs again, times datetimes
    spool.done(path)
    assert spool.empty()
    assert spool.size() == 0


def test_a_full_spool_drops_the_batch_and_keeps_what_it_holds(tmp_path: Path):
    spool = TraceSpool(tmp_path, max_bytes=600)
    assert spool.put([_trace(1)])
    assert not spool.put([_trace(n) for n in range(10)])
    assert [len(rows) for _path, rows in spool.batches()] == [1]


def test_batches_come_back_oldest_first_and_never_half_written(tmp_path: Path):
    spool = TraceSpool(tmp_path, max_bytes=1 << 20)
    for n in range(5):
        spool.put([_trace(n)])
    (tmp_path / ".half.part").write_bytes(b'{"id": "not-a-uuid"')  # a writer mid-write
    assert [rows[0]["request_id"] for _p, rows in spool.batches()] == [f"r{n}" for n in range(5)]


def test_r_obs_1_traces_written_while_the_database_is_down_are_stored_once_it_is_back(
    tmp_path: Path, database: Database
):
    clock = Clock()
    writer = _writer(TraceSpool(tmp_path, max_bytes=1 << 20), clock)
    sent = [_trace(n) for n in range(30)]

    async def scenario() -> None:
        database.down = True
        for n in range(0, 30, 3):  # ten flushes during the outage
            for trace in sent[n : n + 3]:
                writer.record(trace)
            await writer.flush()
            clock.now += 0.2
        assert database.rows == {}
        assert writer.pending() == []  # nothing waits in memory: it is on disk
        database.down = False
        clock.now += record.MAX_BACKOFF_S
        await writer.drain()

    asyncio.run(scenario())
    assert set(database.rows) == {t["id"] for t in sent}
    assert writer.spool is not None
    assert writer.spool.empty()


def test_r_obs_1_the_writer_backs_off_instead_of_asking_a_down_database_every_flush(
    tmp_path: Path, database: Database
):
    clock = Clock()
    writer = _writer(TraceSpool(tmp_path, max_bytes=1 << 20), clock)

    async def scenario() -> None:
        database.down = True
        for n in range(16):  # 16 flushes 0.125 s apart: 2 s of outage
            writer.record(_trace(n))
            await writer.flush()
            await writer.drain()
            clock.now += 0.125

    asyncio.run(scenario())
    # tries at 0, 0.5, 1.5 (backoff 0.5, 1, 2): not one per flush
    assert database.inserts == 3


def test_r_obs_1_a_batch_stored_twice_is_one_row_per_trace(tmp_path: Path, database: Database):
    # a drain that stored a batch but crashed before deleting its file reads it again
    spool = TraceSpool(tmp_path, max_bytes=1 << 20)
    batch = [_trace(n) for n in range(3)]
    spool.put(batch)
    spool.put(batch)
    writer = _writer(spool, Clock())
    asyncio.run(writer.drain())
    assert len(database.rows) == 3
    assert spool.empty()


def test_r_obs_1_a_long_spool_is_written_in_large_inserts_until_it_is_empty(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
):
    # a minute's outage: many small batches; the drain joins them DRAIN_ROWS at a time
    monkeypatch.setattr(record, "DRAIN_ROWS", 30)
    spool = TraceSpool(tmp_path, max_bytes=1 << 24)
    sent = [_trace(n) for n in range(300)]
    for n in range(0, 300, 3):
        spool.put(sent[n : n + 3])
    asyncio.run(_writer(spool, Clock()).drain())
    assert set(database.rows) == {t["id"] for t in sent}
    assert database.inserts == 10
    assert spool.empty()


def test_a_spooled_batch_the_database_refuses_whole_is_set_aside_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    spool = TraceSpool(tmp_path, max_bytes=1 << 20)
    spool.put([_trace(1)])

    def refuse(batch: list[dict[str, Any]]) -> None:
        raise TypeError("unexpected field")  # e.g. a spool of an older version

    monkeypatch.setattr(record, "insert", refuse)
    asyncio.run(_writer(spool, Clock()).drain())
    assert spool.empty()
    assert len(list(tmp_path.glob("*.rejected"))) == 1


def test_without_a_spool_a_failed_batch_stays_queued_in_memory(database: Database):
    writer = _writer(None, Clock())

    async def scenario() -> None:
        database.down = True
        writer.record(_trace(1))
        await writer.flush()
        assert len(writer.pending()) == 1
        database.down = False
        await writer.flush()

    asyncio.run(scenario())
    assert len(database.rows) == 1
