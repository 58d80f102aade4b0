"""Budgets (SPEC R-POL-2, R-LIM-2, R-BEY-8, D-28), the arithmetic: which counters a
request is charged to with the tightest cap on each, what it may cost at worst, what a
stream without usage is charged, and which alert thresholds a settlement crossed.

A budget rule caps one scope — the workspace (`ws:12`), the key of a name
(`key:12:support-bot`) — per UTC calendar period. Its counter is that scope's spending in
the period holding `now` (`ws:12:daily:1796083200`), so periods reset at calendar
boundaries by name alone, and rules of one scope and period (a policy's `daily_budget`
beside a `budgets:` entry, a route's budget node beside the key's budget) share a counter,
the tightest cap refusing. Money is integer micro-dollars. Pure: no I/O, `now` passed in.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from routing.engine.routes.periods import period_bounds
from routing.engine.types import EndpointInfo

MICROS_PER_USD = 1_000_000
CHARS_PER_TOKEN = 4  # D-28: a stream without usage, one token per four streamed characters


@dataclass(frozen=True, slots=True)
class BudgetRule:
    scope: str  # ws:12 | key:12:support-bot
    period: str  # daily | weekly | monthly
    limit_micros: int
    alerts: tuple[float, ...] = ()  # fractions of the cap, each fired once per period
    label: str = ""  # what a person reads: `workspace daily`, `route support-routing node big`


@dataclass(frozen=True, slots=True)
class Charge:
    """One counter a request reserves against, with the tightest cap of its rules."""

    counter: str
    cap_micros: int
    reset_at: float  # epoch seconds: the end of the period
    rules: tuple[BudgetRule, ...]


def workspace_scope(workspace_id: int) -> str:
    return f"ws:{workspace_id}"


def key_scope(workspace_id: int, key_name: str) -> str:
    return f"key:{workspace_id}:{key_name}"


def counter_name(scope: str, period: str, now: float) -> str:
    start, _end = bounds(period, now)
    return f"{scope}:{period}:{int(start)}"


def bounds(period: str, now: float) -> tuple[float, float]:
    """`period_bounds`, worked out once a minute: every period starts on a minute."""
    return _minute_bounds(period, int(now // 60))


@functools.lru_cache(maxsize=64)
def _minute_bounds(period: str, minute: int) -> tuple[float, float]:
    return period_bounds(period, minute * 60.0)


def charges(rules: Iterable[BudgetRule], now: float) -> tuple[Charge, ...]:
    """The counters `rules` charge at `now`, each once, in name order (so that every store
    takes them in one order, and two reservations cannot wait on each other)."""
    grouped: dict[str, list[BudgetRule]] = {}
    ends: dict[str, float] = {}
    for rule in rules:
        counter = counter_name(rule.scope, rule.period, now)
        grouped.setdefault(counter, []).append(rule)
        ends[counter] = bounds(rule.period, now)[1]
    return tuple(
        Charge(counter, min(r.limit_micros for r in found), ends[counter], tuple(found))
        for counter, found in sorted(grouped.items())
    )


def worst_case_micros(
    input_tokens: int, output_tokens: int, endpoints: Iterable[EndpointInfo]
) -> int:
    """R-BEY-8: the input estimate plus `max_tokens` (or, when the request sets none, all
    that the endpoint's context window leaves) at the dearest endpoint it may try."""
    worst = 0.0
    for endpoint in endpoints:
        output = output_tokens or max(endpoint.context_window - input_tokens, 1)
        worst = max(worst, input_tokens * endpoint.price_input + output * endpoint.price_output)
    return math.ceil(worst)


def estimated_stream_micros(input_tokens: int, streamed_chars: int, endpoint: EndpointInfo) -> int:
    """D-28: what a stream that reported no usage is charged — the input estimate plus one
    token per four streamed characters at the endpoint's prices; never less than the input."""
    output = math.ceil(streamed_chars / CHARS_PER_TOKEN)
    return math.ceil(input_tokens * endpoint.price_input + output * endpoint.price_output)


def remaining_micros(charge: Charge, used_micros: int) -> int:
    """What is left under the tightest cap once `used_micros` (spent and reserved) count."""
    return charge.cap_micros - used_micros


def usd(micros: int) -> str:
    """`12.345678`: the `x-switchyard-budget-remaining-usd` value (never negative)."""
    micros = max(micros, 0)
    return f"{micros // MICROS_PER_USD}.{micros % MICROS_PER_USD:06d}"


def crossed(rule: BudgetRule, before_micros: int, after_micros: int) -> tuple[float, ...]:
    """The alert thresholds of `rule` that spending from `before` to `after` crossed."""
    return tuple(
        threshold
        for threshold in rule.alerts
        if before_micros < threshold * rule.limit_micros <= after_micros
    )


def tightest(charges_: Sequence[Charge], used: Sequence[int]) -> int:
    """The least remaining over `charges_`, `used[i]` counting against `charges_[i]`."""
    return min(remaining_micros(c, u) for c, u in zip(charges_, used, strict=True))
