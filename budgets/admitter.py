"""Taking a request's rate limits and budget reservation together, and giving back what it
did not use (the admit step's two store calls; gateway/request_path/admit.py).

`take` is all or nothing across both: limits are taken first, and when the budget then
refuses, the limits go back. `StoreAdmitter` calls the stores one after the other (the
in-process and database stores, where a call is a lock or a transaction); the Redis
admitter (redis/admitter.py) sends both scripts in one round trip, batches a busy worker's
admissions and settlements, and admits from a worker's allowance far from every cap. Both
fire the alert thresholds a settlement crossed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from budgets.alerts import Alerts
from budgets.rules.allowance import Allowance
from budgets.rules.holds import Hold, Settled, Verdict
from budgets.rules.limits import LimitSpec, LimitVerdict
from budgets.stores.budget_store import BudgetStore
from budgets.stores.limit_store import LimitStore


@dataclass(frozen=True, slots=True)
class Taken:
    limits: LimitVerdict | None  # None: no limit applied
    budget: Verdict | None  # None: no budget applied, or the limits refused first
    drawn: Allowance | None = None  # admitted from the worker's allowance, not by the store

    @property
    def admitted(self) -> bool:
        return all(v is None or v.admitted for v in (self.limits, self.budget))


@dataclass(frozen=True, slots=True)
class GiveBack:
    """What an admitted request returns when it ends."""

    limits: tuple[LimitSpec, ...]
    lease: str
    tokens_reserved: int
    tokens_used: int
    hold: Hold | None
    cost_micros: int
    now: float
    drawn: Allowance | None = None  # the allowance that admitted it


Meanwhile = Callable[[], object] | None  # the request's own work while its store answers


class Admitter(Protocol):
    async def take(
        self,
        limits: Sequence[LimitSpec],
        tokens: int,
        lease: str,
        hold: Hold | None,
        now: float,
        meanwhile: Meanwhile = None,
    ) -> Taken: ...

    async def give_back(self, back: GiveBack) -> Settled | None: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StoreAdmitter:
    limiter: LimitStore
    budgets: BudgetStore
    alerts: Alerts | None = None  # fired for each settlement

    async def take(
        self,
        limits: Sequence[LimitSpec],
        tokens: int,
        lease: str,
        hold: Hold | None,
        now: float,
        meanwhile: Meanwhile = None,
    ) -> Taken:
        """`meanwhile` is not run: these stores answer in-process or from the database
        thread, with no wait of their own to overlap."""
        verdict = None
        if limits:
            verdict = await self.limiter.acquire(limits, tokens=tokens, lease=lease, now=now)
            if not verdict.admitted:
                return Taken(verdict, None)
        budget = await self.budgets.reserve(hold) if hold is not None else None
        if budget is not None and not budget.admitted and limits:
            await self.limiter.release(
                limits, lease=lease, tokens_reserved=tokens, tokens_used=0, now=now
            )
        return Taken(verdict, budget)

    async def give_back(self, back: GiveBack) -> Settled | None:
        if back.limits:
            await self.limiter.release(
                back.limits,
                lease=back.lease,
                tokens_reserved=back.tokens_reserved,
                tokens_used=back.tokens_used,
                now=back.now,
            )
        if back.hold is None:
            return None
        settled = await self.budgets.settle(back.hold, back.cost_micros, back.now)
        if settled is not None and self.alerts is not None:
            await self.alerts.settled(back.hold, settled)
        return settled

    async def aclose(self) -> None:
        """Nothing of these stores is held in the process."""
