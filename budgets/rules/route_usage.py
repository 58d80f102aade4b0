"""What a route's `rate_limit` and `budget` nodes read (SPEC R-ROUTE-1: "request and cost
limits from the key's usage"): the key's requests and spending in each calendar period a
node of its routes names, from the budget store's counters — the same on every replica
(R-BEY-9), rebuilt from the ledger like any budget.

A key whose routes have such nodes is charged on an uncapped counter of its name per
period (`tracking_rules`), so every request it makes counts there — when admitted, and
its cost when it ends — whether or not a budget caps it; the walk reads those counters
(`StoreUsage`) before it starts. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from budgets.rules.budgets import BudgetRule, counter_name, key_scope
from budgets.rules.holds import CounterState
from routing.engine.routes import BudgetNode, RateLimitNode, Route

UNCAPPED = 2**62  # micro-dollars no request reaches: a counter that only counts


def usage_periods(routes: Iterable[Route]) -> tuple[str, ...]:
    """The periods the rate and budget nodes of `routes` read, sorted."""
    return tuple(
        sorted(
            {
                node.period
                for route in routes
                for node in route.nodes.values()
                if isinstance(node, RateLimitNode | BudgetNode)
            }
        )
    )


def tracking_rules(
    workspace_id: int, key_name: str, periods: Iterable[str]
) -> tuple[BudgetRule, ...]:
    scope = key_scope(workspace_id, key_name)
    return tuple(BudgetRule(scope, p, UNCAPPED, (), f"key {key_name} {p} usage") for p in periods)


def usage_counters(
    workspace_id: int, key_name: str, periods: Iterable[str], now: float
) -> dict[str, str]:
    """period -> the counter the key's usage in it is kept on."""
    scope = key_scope(workspace_id, key_name)
    return {period: counter_name(scope, period, now) for period in periods}


@dataclass(frozen=True, slots=True)
class StoreUsage:
    """The key's usage per period as the store held it when the request started."""

    counts: Mapping[str, CounterState]  # by period

    def requests(self, period: str) -> int:
        state = self.counts.get(period)
        return state.requests if state else 0

    def cost_micros(self, period: str) -> int:
        state = self.counts.get(period)
        return state.spent_micros if state else 0

    def as_json(self) -> dict[str, list[int]]:
        """`{period: [requests, cost_micros]}`: the trace's replay inputs (R-BEY-3)."""
        return {p: [s.requests, s.spent_micros] for p, s in sorted(self.counts.items())}


@dataclass(frozen=True, slots=True)
class StoreUsageReader:
    """The `usage` of a request's routing state: one key's, read from the store."""

    usage: StoreUsage

    def of(self, key_id: int, now: float) -> StoreUsage:
        return self.usage


NO_USAGE = StoreUsageReader(StoreUsage({}))
