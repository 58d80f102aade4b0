"""The trace writer: request traces are queued in memory and bulk-inserted off the
request path, every `flush_s` or when `flush()` is awaited (shutdown, trace lookups).

A trace holds client-sent strings (the model asked for, routing fields). PostgreSQL
refuses a NUL character in text and JSON, so NULs are cut out before the insert; and a
row the database still refuses is dropped alone (loudly), so one hostile request can
never hold back every trace behind it. A database that is down keeps the batch queued."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.db import DataError, IntegrityError, transaction

from audit.models import RequestTrace

log = logging.getLogger(__name__)
MAX_PENDING = 10_000  # beyond this the oldest traces are dropped, loudly, not the requests


class TraceWriter:
    def __init__(
        self, flush_s: float, run_sync: Callable[[Callable[..., None]], Any] = sync_to_async
    ) -> None:
        """`run_sync` turns the insert into an awaitable (the gateway passes its database
        thread, gateway/state/db_thread.py)."""
        self.flush_s = flush_s
        self.run_sync = run_sync
        self._pending: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None

    def record(self, fields: dict[str, Any]) -> None:
        """Queue one trace (RequestTrace field values). Never blocks, never raises."""
        if len(self._pending) >= MAX_PENDING:
            log.error("trace queue full; dropping the oldest trace")
            self._pending.pop(0)
        self._pending.append(fields)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        # Traces queued while a batch was being written find this task still running (so
        # `record` started no other): they go in the next round, not with the next request.
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
            try:
                await self.run_sync(_insert)(batch)
            except Exception:
                log.exception("writing %d traces failed; they will be retried", len(batch))
                self._pending[:0] = batch

    def pending(self) -> list[dict[str, Any]]:
        return list(self._pending)


def _insert(batch: list[dict[str, Any]]) -> None:
    rows = [RequestTrace(**storable(fields)) for fields in batch]
    try:
        with transaction.atomic():
            RequestTrace.objects.bulk_create(rows)
        return
    except (DataError, IntegrityError):
        pass  # a row the database refuses: find it, keep the others
    refused = 0
    for row in rows:
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except (DataError, IntegrityError):
            refused += 1  # (an IntegrityError: already stored by an earlier try)
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
