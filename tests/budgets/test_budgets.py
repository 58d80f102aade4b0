"""The budget arithmetic (budgets/rules/budgets.py; SPEC R-LIM-2, R-BEY-8, D-28): the
counters a request is charged to, calendar periods, the worst case, a stream's estimate,
alert thresholds. Pure: no database, no clock."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from budgets.rules.budgets import (
    BudgetRule,
    bounds,
    charges,
    crossed,
    estimated_stream_micros,
    usd,
    worst_case_micros,
)
from routing.engine.routes.periods import period_bounds
from tests.routing.builders import make_endpoint

NOW = datetime(2026, 12, 1, 13, 45, tzinfo=UTC).timestamp()  # a Tuesday


def test_r_lim_2_periods_reset_at_utc_calendar_boundaries() -> None:
    rule = BudgetRule("ws:1", "weekly", 100)
    (charge,) = charges([rule], NOW)
    # then the counter names the period's start (Monday 00:00) and resets at its end
    assert charge.counter == f"ws:1:weekly:{int(datetime(2026, 11, 30, tzinfo=UTC).timestamp())}"
    assert charge.reset_at == datetime(2026, 12, 7, tzinfo=UTC).timestamp()


@given(st.floats(min_value=0, max_value=4e9), st.sampled_from(["daily", "weekly", "monthly"]))
def test_r_lim_2_bounds_worked_out_once_a_minute_are_the_calendar_periods(now, period) -> None:
    assert bounds(period, now) == period_bounds(period, now)


def test_d_28_rules_of_one_scope_and_period_share_a_counter_the_tightest_cap_wins() -> None:
    # given the policy's daily_budget beside a daily budget entry, and a key budget
    rules = [BudgetRule("ws:1", "daily", 500), BudgetRule("ws:1", "daily", 300),
             BudgetRule("key:1:bot", "daily", 900)]  # fmt: skip
    # when
    owed = charges(rules, NOW)
    # then one counter per scope, in name order, each capped by its tightest rule
    assert [(c.counter.split(":daily:")[0], c.cap_micros) for c in owed] == [
        ("key:1:bot", 900), ("ws:1", 300),
    ]  # fmt: skip


def test_r_bey_8_the_worst_case_is_input_and_max_tokens_at_the_dearest_endpoint() -> None:
    cheap = make_endpoint(id="cheap", price_input=1.0, price_output=2.0)
    dear = make_endpoint(id="dear", price_input=3.0, price_output=15.0)
    # when a request estimates 100 input tokens and asks for at most 50 more
    worst = worst_case_micros(100, 50, [cheap, dear])
    # then the dearest endpoint's price counts: 100 × 3 + 50 × 15 micro-dollars
    assert worst == 1050


def test_r_bey_8_without_max_tokens_the_context_window_bounds_the_output() -> None:
    endpoint = make_endpoint(id="e", price_input=1.0, price_output=1.0, context_window=1000)
    assert worst_case_micros(100, 0, [endpoint]) == 100 + 900


def test_d_28_a_stream_without_usage_is_the_input_plus_a_token_per_four_characters() -> None:
    endpoint = make_endpoint(id="e", price_input=2.0, price_output=10.0)
    assert estimated_stream_micros(10, 0, endpoint) == 20  # never less than the input
    assert estimated_stream_micros(10, 41, endpoint) == 20 + 11 * 10


def test_r_lim_2_a_threshold_is_crossed_once_by_the_settlement_that_passes_it() -> None:
    rule = BudgetRule("ws:1", "daily", 1000, alerts=(0.5, 0.8))
    assert crossed(rule, 400, 600) == (0.5,)
    assert crossed(rule, 600, 900) == (0.8,)
    assert crossed(rule, 900, 950) == ()
    assert crossed(rule, 0, 1000) == (0.5, 0.8)


def test_r_lim_2_remaining_is_shown_in_usd_and_never_negative() -> None:
    assert usd(12_345_678) == "12.345678"
    assert usd(-5) == "0.000000"
