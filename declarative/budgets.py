"""Validation of budgets and rate limits (SPEC R-LIM-1, R-LIM-2, D-28; CONFIG.md "Keys,
limits, budgets and dynamic routes"): a workspace's `budgets:` list and `limits:` mapping,
and a key entry's `budget:` and `limits:`.

A budget is a period (`daily`, `weekly`, `monthly`: UTC calendar periods), a cap in USD
(stored as integer micro-dollars, rounded half up) and alert thresholds (fractions in
(0, 1], each fired once per period). One budget per period and scope. Limits are
requests and tokens per minute and concurrent requests, each optional. Pure: no Django.
"""

from __future__ import annotations

from decimal import Decimal

from declarative.fields import Fields, to_micros
from declarative.types import BudgetSpec, LimitsSpec

BUDGET_KEYS = ("period", "usd", "alerts")
LIMIT_KEYS = ("requests_per_minute", "tokens_per_minute", "concurrent")
BUDGET_PERIODS = ("daily", "weekly", "monthly")
MAX_BUDGET_USD = 1e12  # as micro-dollars still far inside a BigIntegerField
MAX_ALERTS = 10
MICRO_DIGITS = 6  # money is integer micro-dollars
MAX_TOKENS_PER_MINUTE = 10**15  # a PositiveBigIntegerField


def parse_budgets(workspace: Fields) -> tuple[BudgetSpec, ...] | None:
    """The workspace's `budgets:`; None when absent (what is stored stays)."""
    if not workspace.has("budgets"):
        return None
    specs = []
    for path, raw in workspace.items("budgets"):
        specs.append(parse_budget(Fields(raw, path, workspace.issues, BUDGET_KEYS)))
    seen: dict[str, int] = {}
    for index, spec in enumerate(specs):
        if spec.period in seen:
            workspace.issues.add(
                f"{workspace.at('budgets')}[{index}].period",
                f"a second {spec.period} budget (one per period)",
            )
        seen[spec.period] = index
    return tuple(specs)


def parse_budget(fields: Fields) -> BudgetSpec:
    period = fields.choice("period", BUDGET_PERIODS)
    usd = fields.number("usd", maximum=MAX_BUDGET_USD)
    if usd and Decimal(str(usd)).as_tuple().exponent < -MICRO_DIGITS:  # type: ignore[operator]
        fields.error("usd", f"must have at most {MICRO_DIGITS} decimal places")
    alerts = []
    for path, value in fields.items("alerts", default=()):
        is_fraction = isinstance(value, int | float) and not isinstance(value, bool)
        if not is_fraction or not 0 < value <= 1:
            fields.issues.add(path, "must be a fraction of the budget in (0, 1], such as 0.8")
        else:
            alerts.append(float(value))
    if len(alerts) > MAX_ALERTS:
        fields.error("alerts", f"at most {MAX_ALERTS} thresholds")
    return BudgetSpec(period, to_micros(Decimal(str(usd or 0))), tuple(sorted(set(alerts))))


def parse_limits(fields: Fields | None) -> LimitsSpec | None:
    """A `limits:` mapping; None when absent."""
    if fields is None:
        return None
    return LimitsSpec(
        requests_per_minute=_optional(fields, "requests_per_minute"),
        tokens_per_minute=_optional(fields, "tokens_per_minute", MAX_TOKENS_PER_MINUTE),
        concurrent=_optional(fields, "concurrent"),
    )


def _optional(fields: Fields, key: str, maximum: int | None = None) -> int | None:
    if fields.raw.get(key) is None:
        return None
    if maximum is None:
        return fields.integer(key)
    return fields.integer(key, maximum=maximum)
