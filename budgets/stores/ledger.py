"""The spending ledger (SPEC R-LIM-2): one `SpendEntry` row per request and counter it was
charged to (or per worker's allowance and counter, counting its requests: allowance.py),
the durable truth every budget store rebuilds its counters from — a new process (the
in-process store), a Redis that lost its data. Rows are queued and bulk-inserted off the
request path, like traces; the unique (request, counter) pair makes a retried write, or a
late settlement after the sweeper charged the request, count once.

`totals` answers from the database plus this process's rows not yet written, so a counter
rebuilt in the moment between a settlement and its insert still holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Sum

from audit.batch_writer import BatchWriter, insert_ignoring_conflicts
from budgets.models import SpendEntry

MAX_PENDING = 100_000  # entries; beyond this the oldest are dropped, loudly
ROWS_PER_STATEMENT = 128  # 7 parameters a row: well inside SQLite's 999 and PostgreSQL's
COLUMNS = ("request_id", "counter", "workspace_id", "cost_micros", "kind", "at", "requests")


@dataclass(frozen=True, slots=True)
class Entry:
    request_id: str
    counter: str
    workspace_id: int
    cost_micros: int
    kind: str  # settled | expired
    at: float  # epoch seconds
    requests: int = 1  # the requests it is for (an allowance's: allowance.py)


class Ledger(BatchWriter[Entry]):
    def __init__(self, flush_s: float, run_sync: Callable[[Callable[..., Any]], Any]) -> None:
        """`run_sync` turns a query into an awaitable (the gateway's database thread)."""
        super().__init__(
            write_entries,
            what="ledger entries",
            flush_s=flush_s,
            run_sync=run_sync,
            max_pending=MAX_PENDING,
        )

    def record(self, entries: Sequence[Entry]) -> None:
        """Queue entries for the next write. Never blocks, never raises."""
        self.add(entries)

    async def totals(self, counters: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(spent micro-dollars, requests) of each counter, written or still queued here."""
        found: dict[str, tuple[int, int]] = await self.run_sync(stored_totals)(list(counters))
        wanted = set(counters)
        for entry in self.pending():
            if entry.counter in wanted:
                spent, requests = found.get(entry.counter, (0, 0))
                found[entry.counter] = (spent + entry.cost_micros, requests + entry.requests)
        return found


def write_entries(entries: Sequence[Entry]) -> None:
    """Rows already there (a retry, a late settlement after the sweeper's) are skipped."""
    ops = connection.ops
    rows = [
        (
            e.request_id,
            e.counter,
            e.workspace_id,
            e.cost_micros,
            e.kind,
            ops.adapt_datetimefield_value(datetime.fromtimestamp(e.at, tz=UTC)),
            e.requests,
        )
        for e in entries
    ]
    insert_ignoring_conflicts(SpendEntry._meta.db_table, COLUMNS, rows, max_rows=ROWS_PER_STATEMENT)


def stored_totals(counters: list[str]) -> dict[str, tuple[int, int]]:
    rows = (
        SpendEntry.objects.filter(counter__in=counters)
        .values("counter")
        .annotate(spent=Sum("cost_micros"), requests=Sum("requests"))
    )
    return {row["counter"]: (int(row["spent"] or 0), int(row["requests"])) for row in rows}
