"""Validation of a workspace's `keys:` section (SPEC R-KEY-1, D-24): settings for the
API key of each name — expiry, allowed model patterns, a preset and the routes tried in
order. A name with no key yet is fine: its settings apply once `createkey --name` makes it.

`expires_at` is a date (the key works to the end of that day, UTC) or an ISO datetime; a
past value is accepted and the key is then expired. A preset or route must be declared in
the same workspace of this file or already stored. `budget` and `limits` are the key's
own (R-LIM-1/2; declarative/budgets.py). Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, date, datetime, time, timedelta

from declarative.budgets import BUDGET_KEYS, LIMIT_KEYS, parse_budget, parse_limits
from declarative.fields import SLUG, Fields, check_unique
from declarative.types import BudgetSpec, KeySpec

KEY_KEYS = ("name", "expires_at", "allowed_models", "preset", "routes", "limits", "budget")
MAX_NAME_CHARS = 100  # ApiKey.name


def parse_keys(
    workspace: Fields, presets: Collection[str], routes: Collection[str]
) -> tuple[KeySpec, ...]:
    """`presets` / `routes`: the slugs a key of this workspace may name."""
    specs = []
    for path, raw in workspace.items("keys", default=()):
        fields = Fields(raw, path, workspace.issues, KEY_KEYS)
        preset = fields.text("preset", default=None, pattern=SLUG, hint="a slug", max_length=64)
        if preset and preset not in presets:
            fields.error("preset", f"unknown preset {preset!r} (not in this workspace)")
        attached = fields.texts("routes", pattern=SLUG, hint="a slug")
        for index, slug in enumerate(attached):
            if slug not in routes:
                where = f"{fields.at('routes')}[{index}]"
                workspace.issues.add(where, f"unknown route {slug!r} (not in this workspace)")
        specs.append(
            KeySpec(
                name=fields.text("name", max_length=MAX_NAME_CHARS),
                expires_at=_expiry(fields),
                allowed_models=fields.texts("allowed_models"),
                preset=preset,
                routes=attached,
                budget=_budget(fields),
                limits=parse_limits(fields.child("limits", LIMIT_KEYS)),
            )
        )
    names = [(f"{workspace.at('keys')}[{i}].name", s.name) for i, s in enumerate(specs)]
    check_unique(workspace.issues, names)
    return tuple(specs)


def _budget(fields: Fields) -> BudgetSpec | None:
    child = fields.child("budget", BUDGET_KEYS)
    return None if child is None else parse_budget(child)


def _expiry(fields: Fields) -> datetime | None:
    value = fields.raw.get("expires_at")
    if value is None:
        return None
    if isinstance(value, str):  # YAML reads a bare date or timestamp itself; a quoted one not
        try:
            value = datetime.fromisoformat(value) if "T" in value else date.fromisoformat(value)
        except ValueError:
            fields.error("expires_at", f"{value!r} is not a date (2027-06-30) or ISO datetime")
            return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):  # the end of that day, UTC: expired from the next midnight
        return datetime.combine(value + timedelta(days=1), time(), tzinfo=UTC)
    fields.error("expires_at", "must be a date (2027-06-30) or an ISO datetime")
    return None
