"""Writes to budgets and rate limits (SPEC R-LIM-1, R-LIM-2, D-24, D-28, R-OBS-4), for the
management API (management_api/budget_views.py, the keys resource) and the console. Values come
validated (management_api/budget_serializers.py applies `apply`'s rules); money is integer
micro-dollars. Each function runs in one transaction and audits itself
(`audit.events.record_event`): one AdminEvent per row that changed, with the before/after
of each field; a write that changes nothing writes no event.

A budget or limit belongs to the workspace (`key_name` "") or to the key of a name (D-24),
like a key's settings: a key made later under the name, or rotated, has it at once.

Budget and RateLimit are configuration models of the snapshot (gateway/state/snapshot.py
CONFIG_MODELS): saving or deleting one bumps the configuration version, and every
replica reloads. Each write locks the workspace row first, which serialises concurrent
writes of one workspace's budgets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from django.db import transaction

from audit.events import diff, record_event
from budgets.models import Budget, RateLimit
from workspaces.models import Workspace

BUDGET_FIELDS = ("limit_micros", "alerts")
LIMIT_FIELDS = ("requests_per_minute", "tokens_per_minute", "concurrent")


@dataclass(frozen=True, slots=True)
class BudgetValues:
    period: str  # daily | weekly | monthly
    limit_micros: int
    alerts: tuple[float, ...] = ()  # fractions of the cap, ascending


@dataclass(frozen=True, slots=True)
class LimitValues:
    """None: no limit of that kind; all None: the scope has no limits."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None

    @property
    def is_empty(self) -> bool:
        return all(value is None for value in asdict(self).values())


@dataclass(frozen=True, slots=True)
class SavedBudget:
    budget: Budget
    created: bool


class LimitsNameTaken(ValueError):
    """A rename whose new name already has budgets or limits of its own."""


def _locked(workspace: Workspace) -> Workspace:
    return Workspace.objects.select_for_update().get(pk=workspace.pk)


def _audit(
    workspace: Workspace,
    actor: str,
    action: str,
    target: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> None:
    record_event(
        actor=actor, workspace=workspace, action=action, target=target, before=before, after=after
    )


def _target(key_name: str, what: str = "") -> str:
    """`* daily` (the workspace's), `support-bot daily` (a key name's)."""
    return f"{key_name or '*'} {what}".strip()


# Budgets ----------------------------------------------------------------------------


def _budget_values(budget: Budget) -> dict[str, Any]:
    return {"limit_micros": budget.limit_micros, "alerts": list(budget.alerts)}


def set_budget(
    workspace: Workspace, key_name: str, values: BudgetValues, *, actor: str
) -> SavedBudget:
    """Create or replace the budget of (`key_name`, `values.period`): `budget.create`, or
    `budget.update` with the fields that changed (no event when none did)."""
    after = {"limit_micros": values.limit_micros, "alerts": list(values.alerts)}
    with transaction.atomic():
        locked = _locked(workspace)
        scope = Budget.objects.filter(workspace=locked, key_name=key_name)
        row = scope.filter(period=values.period).first()
        target = _target(key_name, values.period)
        if row is None:
            row = Budget.objects.create(
                workspace=locked, key_name=key_name, period=values.period, **after
            )
            created = {"key_name": key_name, "period": values.period, **after}
            _audit(locked, actor, "budget.create", target, None, created)
            return SavedBudget(row, created=True)
        before = _budget_values(row)
        changed = list(diff(before, after))
        if changed:
            for field in changed:
                setattr(row, field, after[field])
            row.save(update_fields=changed)
            _audit(locked, actor, "budget.update", target, before, after)
    return SavedBudget(row, created=False)


def delete_budget(budget: Budget, *, actor: str) -> None:
    """Delete a budget (`budget.delete`); one already gone is a no-op."""
    with transaction.atomic():
        locked = _locked(budget.workspace)
        row = Budget.objects.filter(pk=budget.pk).first()
        if row is None:
            return
        before = {"key_name": row.key_name, "period": row.period, **_budget_values(row)}
        row.delete()
        _audit(locked, actor, "budget.delete", _target(row.key_name, row.period), before, None)


def set_key_budget(
    workspace: Workspace, key_name: str, values: BudgetValues | None, *, actor: str
) -> None:
    """The budget of a key name as the keys resource (and `apply`'s `keys:` entry) holds
    it, one per key: `values` replaces every budget of the name; None removes them."""
    with transaction.atomic():
        others = Budget.objects.filter(workspace=workspace, key_name=key_name)
        if values is not None:
            others = others.exclude(period=values.period)
        for row in others.order_by("period"):
            delete_budget(row, actor=actor)
        if values is not None:
            set_budget(workspace, key_name, values, actor=actor)


# Rate limits ------------------------------------------------------------------------


def _limit_values(row: RateLimit | None) -> dict[str, Any]:
    return {field: getattr(row, field) if row else None for field in LIMIT_FIELDS}


def set_rate_limits(
    workspace: Workspace, key_name: str, values: LimitValues, *, actor: str
) -> RateLimit | None:
    """Set the limits of one scope; all None removes them. Audited as `rate_limit.create`,
    `.update` (the fields that changed) or `.delete`; no event when nothing changed."""
    after = asdict(values)
    with transaction.atomic():
        locked = _locked(workspace)
        row = RateLimit.objects.filter(workspace=locked, key_name=key_name).first()
        before = _limit_values(row)
        changed = list(diff(before, after))
        if not changed:
            return row
        if values.is_empty and row is not None:
            row.delete()
            action, row = "rate_limit.delete", None
        elif row is None:
            row = RateLimit.objects.create(workspace=locked, key_name=key_name, **after)
            action = "rate_limit.create"
        else:
            for field in changed:
                setattr(row, field, after[field])
            row.save(update_fields=changed)
            action = "rate_limit.update"
        _audit(locked, actor, action, _target(key_name), before, after)
    return row


# A key's rename ---------------------------------------------------------------------


def carry_to_new_name(workspace: Workspace, old_name: str, new_name: str, *, actor: str) -> None:
    """A renamed key keeps its budgets and limits, as it keeps its settings (D-24):
    they move to the new name (`budget.rename`, `rate_limit.rename`). Raises
    `LimitsNameTaken` when the new name has some of its own (one of the two would be
    lost); call inside the rename's transaction, which then writes nothing.

    The spending of the current period stays with the old name's counter: the budget
    starts the period afresh under its new name."""
    with transaction.atomic():
        locked = _locked(workspace)
        budgets = list(Budget.objects.filter(workspace=locked, key_name=old_name))
        limits = list(RateLimit.objects.filter(workspace=locked, key_name=old_name))
        if not budgets and not limits:
            return
        for model in (Budget, RateLimit):
            if model.objects.filter(workspace=locked, key_name=new_name).exists():
                raise LimitsNameTaken(
                    f"the name {new_name!r} already has budgets or rate limits of its own; "
                    f"those of {old_name!r} would have nowhere to go"
                )
        for row in [*budgets, *limits]:
            row.key_name = new_name
            row.save(update_fields=["key_name"])
            action = "budget.rename" if isinstance(row, Budget) else "rate_limit.rename"
            what = row.period if isinstance(row, Budget) else ""
            _audit(
                locked,
                actor,
                action,
                _target(new_name, what),
                {"key_name": old_name},
                {"key_name": new_name},
            )
