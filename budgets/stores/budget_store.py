"""Where budget counters live, and the in-process store of the embedded default.

Every store does the same three things (ARCHITECTURE "Budgets are reserve → settle"):
`reserve` checks `spent + reserved + amount ≤ cap` on every counter of a request and, only
if all hold, reserves `amount` on each, in one atomic step; `settle` replaces the
reservation with what the request cost (once: a second settlement, or one after the
sweeper charged an abandoned reservation, changes nothing); `sweep` charges reservations
whose process died — the whole reserved amount, since the upstream may have billed it.
A counter a store does not hold yet is rebuilt from the ledger first.

`MemoryBudgetStore` keeps counters in this process, behind a lock: correct for one process
(`make run`). Several workers or replicas share PostgreSQL (stores/database.py) or Redis
(redis/store.py). The database and Redis stores raise `BudgetStoreUnavailable` when they
cannot answer; the admit step then refuses (503 `budget_store_unavailable`), never admits.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from typing import Protocol

from budgets.rules.budgets import tightest
from budgets.rules.holds import CounterState, Hold, Settled, Verdict
from budgets.stores.ledger import Entry, Ledger
from routing.engine.routes.periods import period_bounds


class BudgetStore(Protocol):
    async def reserve(self, hold: Hold) -> Verdict: ...

    async def settle(self, hold: Hold, cost_micros: int, now: float) -> Settled | None: ...

    async def read(self, counters: Sequence[str]) -> dict[str, CounterState]: ...

    async def sweep(self, now: float, workspace_ids: Collection[int]) -> list[Hold]:
        """Charge in full the open reservations past their expiry (their request never
        settled: its process died); those of `workspace_ids` where the store keeps each
        workspace's apart (Redis), all of them otherwise."""
        ...


def ledger_entries(
    hold: Hold, cost_micros: int, kind: str, now: float, requests: int = 1
) -> list[Entry]:
    return [
        Entry(hold.request_id, c.counter, hold.workspace_id, cost_micros, kind, now, requests)
        for c in hold.charges
    ]


class MemoryBudgetStore:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._counters: dict[str, CounterState] = {}
        self._open: dict[str, Hold] = {}
        self._lock = threading.Lock()  # the event loop and the scheduler's thread

    async def reserve(self, hold: Hold) -> Verdict:
        await self._load([c.counter for c in hold.charges])
        with self._lock:
            states = [self._counters[c.counter] for c in hold.charges]
            used = [s.spent_micros + s.reserved_micros for s in states]
            for charge, already in zip(hold.charges, used, strict=True):
                if already + hold.amount_micros > charge.cap_micros:
                    return Verdict(False, tightest(hold.charges, used), charge)
            for state in states:
                state.reserved_micros += hold.amount_micros
                state.requests += 1  # counted when admitted: what route rate nodes read
            self._open[hold.request_id] = hold
            return Verdict(True, tightest(hold.charges, [u + hold.amount_micros for u in used]))

    async def settle(self, hold: Hold, cost_micros: int, now: float) -> Settled | None:
        settled = self._settle(hold, cost_micros)
        if settled is not None:
            self.ledger.record(ledger_entries(hold, cost_micros, "settled", now))
        return settled

    def _settle(self, hold: Hold, cost_micros: int) -> Settled | None:
        with self._lock:
            if self._open.pop(hold.request_id, None) is None:
                return None  # settled already, or swept
            before, after = {}, {}
            for charge in hold.charges:
                state = self._counters[charge.counter]
                before[charge.counter] = state.spent_micros
                state.reserved_micros = max(state.reserved_micros - hold.amount_micros, 0)
                state.spent_micros += cost_micros
                after[charge.counter] = state.spent_micros
            return Settled(before, after)

    async def read(self, counters: Sequence[str]) -> dict[str, CounterState]:
        await self._load(counters)
        with self._lock:
            return {
                name: CounterState(s.spent_micros, s.reserved_micros, s.requests)
                for name in counters
                for s in (self._counters[name],)
            }

    async def sweep(self, now: float, workspace_ids: Collection[int] = ()) -> list[Hold]:
        """Charge reservations past their expiry (a request that never settled: a bug or a
        task that was killed), and forget counters of periods that are over."""
        with self._lock:
            expired = [h for h in self._open.values() if h.expires_at < now]
        swept = []
        for hold in expired:
            if self._settle(hold, hold.amount_micros) is not None:
                self.ledger.record(ledger_entries(hold, hold.amount_micros, "expired", now))
                swept.append(hold)
        if swept:
            await self.ledger.flush()  # rare, and what it charged must outlive this process
        with self._lock:
            live = {c.counter for h in self._open.values() for c in h.charges}
            for name in [n for n in self._counters if n not in live and _period_over(n, now)]:
                del self._counters[name]
        return swept

    async def _load(self, counters: Sequence[str]) -> None:
        """Rebuild counters this process does not hold from the ledger."""
        missing = [name for name in counters if name not in self._counters]
        if not missing:
            return
        totals = await self.ledger.totals(missing)
        with self._lock:
            for name in missing:  # another request may have loaded it meanwhile
                spent, requests = totals.get(name, (0, 0))
                self._counters.setdefault(name, CounterState(spent, 0, requests))


def period_end(counter: str) -> float:
    """When the period a counter name ends with (`…:daily:1796083200`) is over."""
    _scope, period, start = counter.rsplit(":", 2)
    return period_bounds(period, float(start))[1]


def _period_over(counter: str, now: float) -> bool:
    return period_end(counter) <= now
