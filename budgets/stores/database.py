"""The budget store in the database (PostgreSQL without Redis; it runs on SQLite too).

A reservation is one conditional UPDATE over every counter of the request —
`reserved += amount WHERE spent + reserved + amount <= cap` (each counter's own cap) — and
the number of rows it changed says whether all of them held: when one did not, the
transaction is rolled back and nothing is reserved. PostgreSQL re-checks the condition on
a row another transaction just changed (READ COMMITTED), so concurrent reservations on one
counter queue on its row lock and cannot overspend. The open reservation is a row written
in the same transaction; a settlement deletes it, moves its amount from `reserved` to
`spent` and writes the ledger rows, all in one transaction, so the ledger and the counters
never disagree. Queries run in the gateway's database thread (`run_sync`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import BigIntegerField, Case, F, Value, When
from django.db.models.functions import Greatest

from budgets.models import BudgetCounter, BudgetReservation
from budgets.rules.budgets import Charge, tightest
from budgets.rules.holds import BudgetStoreUnavailable, CounterState, Hold, Settled, Verdict
from budgets.stores.budget_store import ledger_entries
from budgets.stores.ledger import stored_totals, write_entries

SWEEP_BATCH = 500


class DatabaseBudgetStore:
    def __init__(self, run_sync: Callable[[Callable[..., Any]], Any]) -> None:
        self.run_sync = run_sync
        self._known: set[str] = set()  # counters that have a row (rows are never deleted)

    async def reserve(self, hold: Hold) -> Verdict:
        verdict: Verdict = await self._run(self._reserve, hold)
        return verdict

    async def settle(self, hold: Hold, cost_micros: int, now: float) -> Settled | None:
        settled: Settled | None = await self._run(_settle, hold, cost_micros, "settled", now)
        return settled

    async def read(self, counters: Sequence[str]) -> dict[str, CounterState]:
        found: dict[str, CounterState] = await self._run(_read, list(counters))
        return found

    async def sweep(self, now: float, workspace_ids: Collection[int] = ()) -> list[Hold]:
        swept: list[Hold] = await self._run(_sweep, now)
        return swept

    async def _run(self, func: Callable[..., Any], *args: Any) -> Any:
        try:
            return await self.run_sync(func)(*args)
        except DatabaseError as error:
            raise BudgetStoreUnavailable(str(error)) from error

    def _reserve(self, hold: Hold) -> Verdict:
        names = [c.counter for c in hold.charges]
        if not self._known.issuperset(names):
            _create_counters(names)
            self._known.update(names)
        amount = hold.amount_micros
        with transaction.atomic():
            changed = (
                BudgetCounter.objects.filter(counter__in=names)
                .filter(spent_micros__lte=_caps(hold.charges) - F("reserved_micros") - amount)
                .update(reserved_micros=F("reserved_micros") + amount, requests=F("requests") + 1)
            )
            if changed == len(names):
                BudgetReservation.objects.create(
                    request_id=hold.request_id,
                    counters=names,
                    workspace_id=hold.workspace_id,
                    amount_micros=amount,
                    expires_at=hold.expires_at,
                )
                used = _used(names)
                return Verdict(True, tightest(hold.charges, [used[n] for n in names]))
            transaction.set_rollback(True)
        used = _used(names)
        refused = next(c for c in hold.charges if used[c.counter] + amount > c.cap_micros)
        return Verdict(False, tightest(hold.charges, [used[n] for n in names]), refused)


def _caps(charges: Sequence[Charge]) -> Case:
    return Case(
        *[When(counter=c.counter, then=Value(c.cap_micros)) for c in charges],
        output_field=BigIntegerField(),
    )


def _create_counters(names: list[str]) -> None:
    """Rows for counters new to the database, rebuilt from the ledger (a period's first
    request finds nothing there; a counter table restored from a backup finds its rows)."""
    existing = set(
        BudgetCounter.objects.filter(counter__in=names).values_list("counter", flat=True)
    )
    missing = [n for n in names if n not in existing]
    if missing:
        totals = stored_totals(missing)
        BudgetCounter.objects.bulk_create(
            [
                BudgetCounter(
                    counter=n,
                    spent_micros=totals.get(n, (0, 0))[0],
                    requests=totals.get(n, (0, 0))[1],
                )
                for n in missing
            ],
            ignore_conflicts=True,  # another worker created it meanwhile
        )


def _used(names: list[str]) -> dict[str, int]:
    rows = BudgetCounter.objects.filter(counter__in=names)
    return {r.counter: r.spent_micros + r.reserved_micros for r in rows}


def _settle(hold: Hold, cost_micros: int, kind: str, now: float) -> Settled | None:
    names = [c.counter for c in hold.charges]
    with transaction.atomic():
        deleted, _ = BudgetReservation.objects.filter(request_id=hold.request_id).delete()
        if not deleted:
            return None  # settled already, or swept
        BudgetCounter.objects.filter(counter__in=names).update(
            reserved_micros=Greatest(F("reserved_micros") - hold.amount_micros, Value(0)),
            spent_micros=F("spent_micros") + cost_micros,
        )
        write_entries(ledger_entries(hold, cost_micros, kind, now))
        after = dict(
            BudgetCounter.objects.filter(counter__in=names).values_list("counter", "spent_micros")
        )
    return Settled({n: after[n] - cost_micros for n in names}, after)


def _read(names: list[str]) -> dict[str, CounterState]:
    rows = {r.counter: r for r in BudgetCounter.objects.filter(counter__in=names)}
    found = {}
    for name in names:
        row = rows.get(name)
        if row is None:  # not used yet in this period: what the ledger holds (nothing, mostly)
            spent, requests = stored_totals([name]).get(name, (0, 0))
            found[name] = CounterState(spent, 0, requests)
        else:
            found[name] = CounterState(row.spent_micros, row.reserved_micros, row.requests)
    return found


def _sweep(now: float) -> list[Hold]:
    """Charge the whole amount of reservations whose process died (expired)."""
    swept = []
    for row in BudgetReservation.objects.filter(expires_at__lt=now)[:SWEEP_BATCH]:
        charges = tuple(Charge(name, 0, 0.0, ()) for name in row.counters)
        hold = Hold(row.request_id, row.workspace_id, charges, row.amount_micros, row.expires_at)
        if _settle(hold, hold.amount_micros, "expired", now) is not None:
            swept.append(hold)
    return swept
