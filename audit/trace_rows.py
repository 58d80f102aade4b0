"""Traces into the database: a batch is one multi-row `INSERT … ON CONFLICT DO NOTHING`
per `ROWS_PER_STATEMENT` rows (audit/batch_writer.py), its JSON columns encoded by orjson.

Raw SQL, like the spending ledger (budgets/stores/ledger.py): the ORM's `bulk_create`
built a model instance a row, prepared its 26 values through every field's methods and
encoded the three JSON columns with the standard library's encoder — on this machine
~55 µs a row, more than SQLite spends storing it with its nine indexes, in the gateway's
database thread, beside the requests. Each column's adapter is chosen once, from the
model's own fields, so a new field needs no change here; values the writer does not give
take the field's default.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import orjson
from django.db import connection, models

from audit.batch_writer import insert_ignoring_conflicts
from audit.models import RequestTrace

ROWS_PER_STATEMENT = 32  # 26 columns: inside SQLite's oldest limit of 999 parameters
_NOT_GIVEN: Any = object()
# A column's name, its field's attribute name, the field, and what adapts a value of it.
Column = tuple[str, str, "models.Field[Any, Any]", Callable[[Any], Any]]


class OrjsonEncoder(json.JSONEncoder):
    """What the database backends' `adapt_json_value` encode with (it takes a
    JSONEncoder class): orjson, which takes a trace's decision ~10× faster. Non-string keys
    become strings and anything else unknown its `str`, as a trace is never refused for
    its JSON."""

    def encode(self, o: Any) -> str:
        return orjson.dumps(o, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def insert_rows(traces: Sequence[dict[str, Any]]) -> None:
    """Insert `traces` (field values by attribute name: `workspace_id`), skipping any whose
    id is stored already."""
    columns = _columns()
    rows = [_row(trace, columns) for trace in traces]
    insert_ignoring_conflicts(
        RequestTrace._meta.db_table, [c[0] for c in columns], rows, max_rows=ROWS_PER_STATEMENT
    )


def _row(trace: dict[str, Any], columns: tuple[Column, ...]) -> list[Any]:
    values = []
    for _column, attname, field, adapt in columns:
        value = trace.get(attname, _NOT_GIVEN)
        values.append(adapt(field.get_default() if value is _NOT_GIVEN else value))
    return values


@cache
def _columns() -> tuple[Column, ...]:
    """(column, attribute name, field, adapter) of every concrete field, in model order.
    Cached per process: the adapters depend on the one database backend it uses."""
    return tuple(
        (field.column, field.attname, field, _adapter(field))
        for field in RequestTrace._meta.concrete_fields
    )


def _adapter(field: models.Field[Any, Any]) -> Callable[[Any], Any]:
    """How a value of `field` becomes a query parameter on this connection's backend."""
    ops = connection.ops
    if isinstance(field, models.JSONField):
        return lambda value: ops.adapt_json_value(value, OrjsonEncoder)
    if isinstance(field, models.DateTimeField):
        return ops.adapt_datetimefield_value
    if isinstance(field, models.UUIDField):
        return lambda value: field.get_db_prep_value(value, connection)
    return _as_is  # text, numbers, booleans and foreign-key ids go as they are


def _as_is(value: Any) -> Any:
    return value
