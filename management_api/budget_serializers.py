"""Wire shapes of the management API's budgets and rate limits (SPEC R-MGT-1, R-LIM-1,
R-LIM-2, D-28): the `budgets` and `limits` resources, and a key's `budget` and `limits`.

Bodies are validated by the rules `apply` uses (`declarative.budgets`: periods, a cap
in USD ≥ 0, alert fractions in (0, 1], at most ten; limits ≥ 1), every problem with its
path, plus one `apply` does not check: a cap has at most six decimals (micro-dollars).
The declared fields describe the body in the OpenAPI schema; `to_internal_value` returns
the values `budgets.services` writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from budgets.models import KEY_NAME_CHARS, Budget, RateLimit
from budgets.services import BudgetValues, LimitValues
from declarative.budgets import (
    BUDGET_KEYS,
    BUDGET_PERIODS,
    LIMIT_KEYS,
    MAX_ALERTS,
    MAX_BUDGET_USD,
    MAX_TOKENS_PER_MINUTE,
    parse_budget,
    parse_limits,
)
from declarative.fields import Fields, Issues

MICROS_PER_USD = 1_000_000
SCOPES = ("workspace", "key")
SOURCES = ("budget", "policy")  # a row of `budgets`, or the policy's `daily_budget`
PERIOD_ORDER = {period: index for index, period in enumerate(BUDGET_PERIODS)}


class _Problems(Issues):
    """`apply`'s problems as (path, message) pairs, to raise as one ValidationError."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, list[str]] = {}

    def add(self, path: str, message: str) -> None:
        super().add(path, message)
        self.found.setdefault(path or "non_field_errors", []).append(message)

    def raise_if_any(self) -> None:
        if self.found:
            raise serializers.ValidationError(self.found)


def _key_name(fields: Fields) -> str:
    name = fields.text("key_name", default="", max_length=KEY_NAME_CHARS)
    if name and not name.strip():
        fields.error("key_name", 'must not be blank; leave it out (or "") for the workspace')
    return name


def micros_as_usd(micros: int) -> float:
    return micros / MICROS_PER_USD


class BudgetRuleSerializer(serializers.Serializer):
    """A budget as `apply`'s file writes it: a cap in USD per UTC calendar period, with
    alert thresholds (fractions of the cap, each fired once per period)."""

    period = serializers.ChoiceField(choices=BUDGET_PERIODS)
    usd = serializers.FloatField(
        min_value=0, max_value=MAX_BUDGET_USD, help_text="the cap; at most 6 decimals"
    )
    alerts = serializers.ListField(
        child=serializers.FloatField(min_value=0, max_value=1),
        required=False,
        max_length=MAX_ALERTS,
        help_text="fractions in (0, 1], e.g. [0.8, 0.95]; default none",
    )

    extra_keys: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        problems = _Problems()
        fields = Fields(data, "", problems, (*self.extra_keys, *BUDGET_KEYS))
        spec = parse_budget(fields)
        values = BudgetValues(spec.period, spec.limit_micros, spec.alerts)
        extra = self.read_extra(fields)
        problems.raise_if_any()
        return {**extra, "budget": values} if self.extra_keys else values

    def read_extra(self, fields: Fields) -> dict[str, Any]:
        return {}

    def to_representation(self, budget: Budget) -> dict[str, Any]:
        return {
            "period": budget.period,
            "usd": micros_as_usd(budget.limit_micros),
            "alerts": list(budget.alerts),
        }


class BudgetBodySerializer(BudgetRuleSerializer):
    """The body of `POST budgets`: the budget of the workspace (`key_name` left out or
    "") or of the key of that name (which need not exist yet); it replaces the budget of
    the same scope and period."""

    key_name = serializers.CharField(required=False, allow_blank=True, max_length=KEY_NAME_CHARS)

    extra_keys = ("key_name",)

    def read_extra(self, fields: Fields) -> dict[str, Any]:
        return {"key_name": _key_name(fields)}


class RateLimitsSerializer(serializers.Serializer):
    """Rate limits (R-LIM-1); null or absent: no limit of that kind."""

    requests_per_minute = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    tokens_per_minute = serializers.IntegerField(
        min_value=1,
        max_value=MAX_TOKENS_PER_MINUTE,
        allow_null=True,
        required=False,
        help_text="the input estimate plus max_tokens, settled to the usage",
    )
    concurrent = serializers.IntegerField(
        min_value=1, allow_null=True, required=False, help_text="requests in flight at once"
    )

    extra_keys: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        problems = _Problems()
        fields = Fields(data, "", problems, (*self.extra_keys, *LIMIT_KEYS))
        spec = parse_limits(fields)
        assert spec is not None  # the fields are given, so the limits are parsed
        values = LimitValues(spec.requests_per_minute, spec.tokens_per_minute, spec.concurrent)
        extra = {"key_name": _key_name(fields)} if self.extra_keys else {}
        problems.raise_if_any()
        return {**extra, "limits": values} if self.extra_keys else values

    def to_representation(self, row: RateLimit) -> dict[str, Any]:
        return {field: getattr(row, field) for field in LIMIT_KEYS}


class RateLimitBodySerializer(RateLimitsSerializer):
    """The body of `PUT limits`: the limits of the workspace (`key_name` left out or "")
    or of the key of that name, replaced whole: absent fields are null, and all null
    removes the scope's limits."""

    key_name = serializers.CharField(required=False, allow_blank=True, max_length=KEY_NAME_CHARS)

    extra_keys = ("key_name",)


class BudgetSerializer(serializers.Serializer):
    """A budget as configured. `source` is `budget` for a row of this resource (its `id`
    is what `DELETE budgets/{id}` takes), `policy` for the policy's `daily_budget` — a
    daily workspace budget changed with the policy, so its `id` is null."""

    id = serializers.IntegerField(allow_null=True)
    source = serializers.ChoiceField(choices=SOURCES)
    scope = serializers.ChoiceField(choices=SCOPES)
    key_name = serializers.CharField(help_text='"" for the workspace\'s own')
    period = serializers.ChoiceField(choices=BUDGET_PERIODS)
    usd = serializers.FloatField()
    alerts = serializers.ListField(child=serializers.FloatField())


class BudgetStatusSerializer(BudgetSerializer):
    """A budget with its current period: what was spent (settled requests), what open
    requests hold reserved, and what is left under this cap (never below 0). Budgets of
    one scope and period share one counter."""

    spent_usd = serializers.FloatField()
    reserved_usd = serializers.FloatField()
    remaining_usd = serializers.FloatField()
    requests = serializers.IntegerField(help_text="requests settled in the period")
    period_start = serializers.DateTimeField()
    resets_at = serializers.DateTimeField(help_text="the end of the period (UTC)")


class RateLimitSerializer(serializers.Serializer):
    """The rate limits of one scope; null: no limit of that kind."""

    scope = serializers.ChoiceField(choices=SCOPES)
    key_name = serializers.CharField(help_text='"" for the workspace\'s own')
    requests_per_minute = serializers.IntegerField(allow_null=True)
    tokens_per_minute = serializers.IntegerField(allow_null=True)
    concurrent = serializers.IntegerField(allow_null=True)


class LimitInUseSerializer(serializers.Serializer):
    used = serializers.FloatField(
        help_text="Requests or tokens of the last minute not yet drained; requests in flight"
    )
    remaining = serializers.FloatField()
    reset_s = serializers.FloatField(help_text="Seconds until the bucket is empty (0: leases)")


class RateLimitStatusSerializer(RateLimitSerializer):
    """A scope's limits with what each has in use now (R-LIM-1)."""

    in_use = serializers.DictField(
        child=LimitInUseSerializer(),
        allow_null=True,
        help_text="By kind (requests, tokens, concurrent) for each limit set; null when the "
        "limit store cannot answer. Every replica's on Redis, this worker's without it.",
    )


def budget_shown(budget: Budget) -> dict[str, Any]:
    """A `budgets` row as `BudgetSerializer` renders it (`limit_micros` is not shown)."""
    return {
        "id": budget.pk,
        "source": "budget",
        "scope": "key" if budget.key_name else "workspace",
        "key_name": budget.key_name,
        "period": budget.period,
        "usd": micros_as_usd(budget.limit_micros),
        "alerts": list(budget.alerts),
        "limit_micros": budget.limit_micros,
    }


def policy_budget_shown(daily_budget_micros: int) -> dict[str, Any]:
    """The policy's `daily_budget` as a `budgets` row: a daily workspace budget (D-28)."""
    return {
        "id": None,
        "source": "policy",
        "scope": "workspace",
        "key_name": "",
        "period": "daily",
        "usd": micros_as_usd(daily_budget_micros),
        "alerts": [],
        "limit_micros": daily_budget_micros,
    }


def limits_shown(key_name: str, row: RateLimit | None) -> dict[str, Any]:
    values = {field: getattr(row, field) if row else None for field in LIMIT_KEYS}
    return {"scope": "key" if key_name else "workspace", "key_name": key_name, **values}


def is_limiting(row: RateLimit) -> bool:
    """A row with every limit null (`limits: {}` in a file) limits nothing."""
    return any(getattr(row, field) is not None for field in LIMIT_KEYS)


def key_budgets_by_name(workspace_id: int) -> Mapping[str, Budget]:
    """The budget each key name shows: its first by period (daily, weekly, monthly), as
    `export` writes a key's one `budget:`."""
    rows = Budget.objects.filter(workspace_id=workspace_id).exclude(key_name="")
    found: dict[str, Budget] = {}
    for row in sorted(rows, key=lambda b: PERIOD_ORDER.get(b.period, len(PERIOD_ORDER))):
        found.setdefault(row.key_name, row)
    return found


def key_limits_by_name(workspace_id: int) -> Mapping[str, RateLimit]:
    rows = RateLimit.objects.filter(workspace_id=workspace_id).exclude(key_name="")
    return {row.key_name: row for row in rows if is_limiting(row)}
