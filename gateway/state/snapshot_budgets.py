"""Reading budgets and rate limits into the snapshot (SPEC R-LIM-1, R-LIM-2, D-28): the
workspace's own (its `budgets:` and its policy's `daily_budget`, which is shorthand for a
daily workspace budget) and each key name's. Two queries; called by `load_snapshot`
inside its transaction, so a request reads them without SQL."""

from __future__ import annotations

from dataclasses import dataclass

from budgets.models import Budget, RateLimit
from budgets.rules.budgets import BudgetRule, key_scope, workspace_scope
from budgets.rules.limits import LimitSpec
from workspaces.models import Policy


@dataclass(frozen=True, slots=True)
class Governed:
    """The budgets and limits of one scope: a workspace (key name "") or a key name."""

    budgets: tuple[BudgetRule, ...] = ()
    limits: LimitSpec | None = None


def load_governance() -> dict[tuple[int, str], Governed]:
    budgets: dict[tuple[int, str], list[BudgetRule]] = {}
    for row in Budget.objects.all():
        rule = _rule(
            row.workspace_id, row.key_name, row.period, row.limit_micros, tuple(row.alerts)
        )
        budgets.setdefault((row.workspace_id, row.key_name), []).append(rule)
    for policy in Policy.objects.filter(daily_budget_micros__isnull=False):
        budgets.setdefault((policy.workspace_id, ""), []).append(
            _rule(
                policy.workspace_id,
                "",
                "daily",
                policy.daily_budget_micros,
                (),
                label="workspace daily_budget",
            )
        )
    limits = {
        (row.workspace_id, row.key_name): limit_spec(row)
        for row in RateLimit.objects.all()
        if (row.requests_per_minute, row.tokens_per_minute, row.concurrent) != (None,) * 3
    }
    return {
        owner: Governed(tuple(budgets.get(owner, ())), limits.get(owner))
        for owner in budgets.keys() | limits.keys()
    }


def _rule(
    workspace_id: int,
    key_name: str,
    period: str,
    limit_micros: int,
    alerts: tuple[float, ...],
    label: str = "",
) -> BudgetRule:
    scope = key_scope(workspace_id, key_name) if key_name else workspace_scope(workspace_id)
    label = label or (f"key {key_name} {period}" if key_name else f"workspace {period}")
    return BudgetRule(scope, period, limit_micros, alerts, label)


def limit_spec(row: RateLimit) -> LimitSpec:
    """A `RateLimit` row as the limit stores take it, under its scope's name."""
    scope = (
        key_scope(row.workspace_id, row.key_name)
        if row.key_name
        else workspace_scope(row.workspace_id)
    )
    return LimitSpec(scope, row.requests_per_minute, row.tokens_per_minute, row.concurrent)
