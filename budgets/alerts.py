"""Budget alert thresholds (SPEC R-LIM-2): a settlement that carried a budget's spending
over one of its fractions records it once per period — the `BudgetAlert` row is unique per
counter (which names the period) and threshold, so whichever replica sees it first writes
the audit event and counts the alert (`count`, handed in), and the others find the row and
do nothing.

An alert changes no configuration: its event (`audit.events.record_event`) has no
before/after, only what was crossed (`budget`, `counter`, `threshold`, `limit_usd`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from audit.events import record_event
from budgets.models import BudgetAlert
from budgets.rules.budgets import BudgetRule, crossed, usd
from budgets.rules.holds import Hold, Settled

ACTION = "budget.alert"
_fired: set[tuple[str, float]] = set()  # this process's own, to skip the database


@dataclass(frozen=True, slots=True)
class Alerts:
    """Fires the thresholds a settlement crossed; the admitters (admitter.py,
    redis/admitter.py) call it for each settlement — a request's, or a worker's
    allowance's (redis/allowances.py)."""

    run_sync: Callable[[Callable[..., Any]], Any]  # a query as an awaitable (the database thread)
    # Counts one fired alert by budget label and threshold (the gateway's metric).
    count: Callable[[str, str], None]

    async def settled(self, hold: Hold, settled: Settled) -> None:
        found = [
            (rule, c.counter, t)
            for c in hold.charges
            for rule in c.rules
            for t in crossed(rule, settled.before[c.counter], settled.after[c.counter])
        ]
        if found:
            await self.fire(found, hold.workspace_id)

    async def fire(
        self, crossed: Sequence[tuple[BudgetRule, str, float]], workspace_id: int
    ) -> None:
        fresh = [(rule, counter, t) for rule, counter, t in crossed if (counter, t) not in _fired]
        if fresh:
            for rule, threshold in await self.run_sync(_record)(fresh, workspace_id):
                self.count(rule.label, f"{threshold:g}")


def _record(
    crossed: Sequence[tuple[BudgetRule, str, float]], workspace_id: int
) -> list[tuple[BudgetRule, float]]:
    fired = []
    for rule, counter, threshold in crossed:
        _fired.add((counter, threshold))
        try:
            with transaction.atomic():
                BudgetAlert.objects.create(counter=counter, threshold=threshold)
                record_event(
                    actor="switchyard",
                    workspace=workspace_id,
                    action=ACTION,
                    target=f"{rule.label} at {threshold:g}",
                    before=None,
                    after=None,
                    extra={
                        "budget": rule.label,
                        "counter": counter,
                        "threshold": threshold,
                        "limit_usd": usd(rule.limit_micros),
                    },
                )
        except IntegrityError:
            continue  # fired already this period (another replica, or before a restart)
        fired.append((rule, threshold))
    return fired
