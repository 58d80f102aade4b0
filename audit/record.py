"""The trace writer: request traces are queued in memory and bulk-inserted off the
request path, every `flush_s` or when `flush()` is awaited (shutdown, trace lookups).

Durable (SPEC R-OBS-1): a batch the database cannot take — it is down, restarting, or
refusing connections — goes to the on-disk spool (audit/spool.py) and the writer backs
off (0.5 s doubling to 10 s), spooling what comes meanwhile without trying the database.
When an insert succeeds again, and on every `drain()` tick of the scheduler, the spooled
batches follow, oldest first. Inserts are idempotent by trace id (`ON CONFLICT DO
NOTHING`), so a batch written twice — a retry after a lost reply, two workers draining
one file — is stored once. Without a spool (tests) a failed batch stays queued in memory.

A trace holds client-sent strings (the model asked for, routing fields). PostgreSQL
refuses a NUL character in text and JSON, so NULs are cut out before the insert; and a
row the database still refuses is dropped alone (loudly), so one hostile request can
never hold back every trace behind it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.db import DataError, IntegrityError, InterfaceError, OperationalError, transaction

from audit.batch_writer import BatchWriter
from audit.spool import TraceSpool
from audit.trace_rows import insert_rows

log = logging.getLogger(__name__)
MAX_PENDING = 10_000  # beyond this the oldest traces are dropped, loudly, not the requests
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.5, 10.0
DRAIN_BUDGET_S = 0.25  # a drain holds the database thread this long at most per turn
DRAIN_ROWS = 1_000  # spooled traces written in one insert


class TraceWriter(BatchWriter[dict[str, Any]]):
    def __init__(
        self,
        flush_s: float,
        run_sync: Callable[[Callable[..., Any]], Any] = sync_to_async,
        spool: TraceSpool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            self._store, what="traces", flush_s=flush_s, run_sync=run_sync, max_pending=MAX_PENDING
        )
        self.spool, self.clock = spool, clock
        self._retry_at = 0.0  # before this, batches go straight to the spool
        self._backoff_s = 0.0

    def record(self, fields: dict[str, Any]) -> None:
        """Queue one trace (RequestTrace field values). Never blocks, never raises."""
        self.add([fields])

    async def drain(self) -> None:
        """Spooled batches into the database while it takes them (the scheduler's tick),
        in turns of at most DRAIN_BUDGET_S, so the thread's other work goes in between."""
        while self.spool is not None and self.clock() >= self._retry_at and not self.spool.empty():
            if not await self.run_sync(self._drain)():
                return

    def _store(self, batch: list[dict[str, Any]]) -> None:
        """One batch, in the database thread: inserted, or spooled while the database is
        away. Raises only without a spool (the batch then stays queued)."""
        if self.spool is None:
            insert(batch)
            return
        if self.clock() < self._retry_at:
            self.spool.put(batch)
            return
        try:
            insert(batch)
        except Exception:
            self._away("writing %d traces failed; spooled", len(batch))
            self.spool.put(batch)
            return
        self._backoff_s = 0.0
        self._drain()

    def _drain(self) -> bool:
        """One turn: spooled batches, oldest first, inserted DRAIN_ROWS at a time. True
        when the turn ran out of time with more to write."""
        assert self.spool is not None
        started = self.clock()
        group: list[tuple[Path, list[dict[str, Any]]]] = []
        for path, rows in self.spool.batches():
            group.append((path, rows))
            if sum(len(rows) for _path, rows in group) < DRAIN_ROWS:
                continue
            if not self._write(group):
                return False
            group = []
            if self.clock() - started > DRAIN_BUDGET_S:
                return True
        if group and not self._write(group):
            return False
        self._backoff_s = 0.0
        return False

    def _write(self, group: list[tuple[Path, list[dict[str, Any]]]]) -> bool:
        """Spooled batches in one insert, each file deleted once stored; False (and back
        off) while the database is away. A group the database refuses for another reason
        is tried file by file, and a file it refuses is set aside, never retried."""
        assert self.spool is not None
        try:
            insert([row for _path, rows in group for row in rows])
        except (OperationalError, InterfaceError):
            self._away("writing spooled traces failed; retrying later")
            return False
        except Exception:
            if len(group) == 1:
                log.exception("spooled traces in %s cannot be stored; set aside", group[0][0].name)
                self.spool.set_aside(group[0][0])
                return True
            return all(self._write([one]) for one in group)
        for path, _rows in group:
            self.spool.done(path)
        return True

    def _away(self, message: str, *args: object) -> None:
        self._backoff_s = min(MAX_BACKOFF_S, max(FIRST_BACKOFF_S, self._backoff_s * 2))
        self._retry_at = self.clock() + self._backoff_s
        log.warning(message + " (next try in %.1f s)", *args, self._backoff_s, exc_info=True)


def insert(batch: list[dict[str, Any]]) -> None:
    """Store a batch; a trace already stored (same id), or twice in it, is stored once."""
    rows = [storable(fields) for fields in {fields["id"]: fields for fields in batch}.values()]
    try:
        with transaction.atomic():
            insert_rows(rows)
        return
    except (DataError, IntegrityError):
        pass  # a row the database refuses: find it, keep the others
    refused = 0
    for row in rows:
        try:
            with transaction.atomic():
                insert_rows([row])
        except (DataError, IntegrityError):
            refused += 1
    if refused:
        log.error("dropped %d of %d traces the database refused", refused, len(rows))


def storable(value: Any) -> Any:
    """`value` with NUL characters cut out of every string in it (PostgreSQL stores none).
    Almost no trace holds one: one orjson pass (which writes a NUL as `\\u0000`, and any
    other character otherwise) says so, and only then is the value walked and copied."""
    if isinstance(value, dict | list) and b"\\u0000" not in _json(value):
        return value
    return _without_nul(value)


def _json(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return b"\\u0000"  # not plain JSON: walk it


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(item) for item in value]
    return value
