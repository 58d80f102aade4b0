"""Rows queued in memory and written in batches off the request path, every `flush_s` or
when `flush()` is awaited (shutdown, lookups): the trace writer (audit/record.py) and the
spending ledger (budgets/stores/ledger.py). A database that is down keeps the batch
queued; past `max_pending` the oldest rows are dropped, loudly, never the requests.
Both store a batch with `insert_ignoring_conflicts`: raw multi-row INSERTs, as the ORM's
`bulk_create` spent more per row than the database spends storing it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connection

log = logging.getLogger(__name__)
Row = TypeVar("Row")


class BatchWriter(Generic[Row]):
    def __init__(
        self,
        write: Callable[[list[Row]], None],
        *,
        what: str,
        flush_s: float,
        run_sync: Callable[[Callable[..., Any]], Any],
        max_pending: int,
    ) -> None:
        """`write` stores one batch (synchronously); `run_sync` turns it into an awaitable
        (the gateway passes its database thread, gateway/state/db_thread.py)."""
        self.write, self.what, self.flush_s = write, what, flush_s
        self.run_sync, self.max_pending = run_sync, max_pending
        self._pending: list[Row] = []
        self._writing: list[Row] = []  # the batch being written: not yet readable in the DB
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None

    def add(self, rows: Sequence[Row]) -> None:
        """Queue rows for the next write. Never blocks, never raises."""
        overflow = len(self._pending) + len(rows) - self.max_pending
        if overflow > 0:
            log.error("%s queue full; dropping the %d oldest", self.what, overflow)
            del self._pending[:overflow]
        self._pending.extend(rows)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        # Rows queued while a batch was being written find this task still running (so
        # `add` started no other): they go in the next round, not with the next request.
        while True:
            await asyncio.sleep(self.flush_s)
            await self.flush()
            if not self._pending:
                return

    async def flush(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            batch, self._pending = self._pending, []
            if not batch:
                return
            self._writing = batch
            try:
                await self.run_sync(self.write)(batch)
            except Exception:
                log.exception("writing %d %s failed; they will be retried", len(batch), self.what)
                self._pending[:0] = batch
            finally:
                self._writing = []

    def pending(self) -> list[Row]:
        """The rows not yet stored, the batch being written included: a reader that asks
        the database and then this (the ledger's totals) misses none. On one database
        thread, as the gateway's, it counts none twice either: the batch is cleared on the
        loop before a query that ran after its write is answered."""
        return [*self._writing, *self._pending]


def insert_ignoring_conflicts(
    table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_rows: int
) -> None:
    """`INSERT INTO table (columns) VALUES … ON CONFLICT DO NOTHING`, at most `max_rows`
    rows (each its query parameters, one a column) a statement: a row already stored — a
    retry, a duplicate — is skipped. A power of two rows at a time, so the driver sees a
    few statement shapes, each prepared once, not one for every batch size."""
    ops = connection.ops
    names = ", ".join(ops.quote_name(column) for column in columns)
    row = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        start = 0
        while start < len(rows):
            size = min(1 << (len(rows) - start).bit_length() - 1, max_rows)
            chunk, start = rows[start : start + size], start + size
            cursor.execute(
                f"INSERT INTO {ops.quote_name(table)} ({names}) VALUES"
                f" {', '.join([row] * len(chunk))} ON CONFLICT DO NOTHING",
                [value for values in chunk for value in values],
            )
