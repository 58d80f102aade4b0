"""The trace writer: request traces are queued in memory and bulk-inserted off the
request path, every `flush_s` or when `flush()` is awaited (shutdown, trace lookups).

A trace holds client-sent strings (the model asked for, routing fields). PostgreSQL
refuses a NUL character in text and JSON, so NULs are cut out before the insert; and a
row the database still refuses is dropped alone (loudly), so one hostile request can
never hold back every trace behind it. A database that is down keeps the batch queued."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.db import DataError, IntegrityError, transaction

from audit.batch_writer import BatchWriter
from audit.models import RequestTrace

log = logging.getLogger(__name__)
MAX_PENDING = 10_000  # beyond this the oldest traces are dropped, loudly, not the requests


class TraceWriter(BatchWriter[dict[str, Any]]):
    def __init__(
        self, flush_s: float, run_sync: Callable[[Callable[..., None]], Any] = sync_to_async
    ) -> None:
        super().__init__(_insert, what="traces", flush_s=flush_s, run_sync=run_sync,
                         max_pending=MAX_PENDING)  # fmt: skip

    def record(self, fields: dict[str, Any]) -> None:
        """Queue one trace (RequestTrace field values). Never blocks, never raises."""
        self.add([fields])


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
