"""The rate-limit arithmetic (SPEC R-LIM-1, D-29): GCRA per minute, concurrency, all or
nothing across scopes, the verdict's headers. Pure: the state is a dict these tests keep."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgets.rules.limits import (
    Kind,
    LimitSpec,
    LimitVerdict,
    RateKey,
    RateState,
    admit,
    format_reset,
    plan_checks,
    settled,
)

NOW = 1_767_225_600.0  # epoch seconds: the float noise of real timestamps is part of the test
FAST = settings(max_examples=200, deadline=None)


def _take(
    specs: list[LimitSpec],
    rates: dict[RateKey, RateState],
    *,
    now: float = NOW,
    tokens: int = 0,
    live: dict[str, int] | None = None,
) -> LimitVerdict:
    """One acquire against `rates`, storing what it took, as a store would."""
    verdict, updates = admit(plan_checks(specs, tokens=tokens), rates, live or {}, now=now)
    rates.update(updates)
    return verdict


@pytest.mark.parametrize(("limit", "retry_after_s"), [(1, 60), (7, 9), (60, 1), (1000, 1)])
def test_r_lim_1_gcra_admits_exactly_the_limit_from_a_cold_start(limit, retry_after_s):
    # given
    rates: dict[RateKey, RateState] = {}
    spec = [LimitSpec("key:34", requests_per_minute=limit)]
    # when
    admitted = [_take(spec, rates).admitted for _ in range(limit)]
    refused = _take(spec, rates)
    # then
    assert admitted == [True] * limit
    assert (refused.admitted, refused.refused) == (False, "key:34/requests")
    assert refused.retry_after_s == retry_after_s  # ceil(60 s / limit): one request drains
    assert refused.headers["Retry-After"] == str(retry_after_s)


def test_r_lim_1_retry_after_is_the_wait_until_the_request_fits():
    # given 6 per minute (one every 10 s), all six used at NOW
    rates: dict[RateKey, RateState] = {}
    spec = [LimitSpec("ws:12", requests_per_minute=6)]
    for _ in range(6):
        _take(spec, rates)
    # when 3 s later: 0.3 of a request drained, 0.7 more (7 s) to wait
    refused = _take(spec, rates, now=NOW + 3)
    # then
    assert refused.retry_after_s == 7
    assert not _take(spec, rates, now=NOW + 9.99).admitted
    assert _take(spec, rates, now=NOW + 10).admitted


def test_r_lim_1_after_a_burst_the_allowance_refills_at_the_rate():
    """Per minute is a bucket, not a fixed window: a full burst, then one request per
    T = 60 s / limit as it drains (119 in the first minute at 60 per minute, as OpenAI's
    "reset: time until full again" implies)."""
    rates: dict[RateKey, RateState] = {}
    spec = [LimitSpec("ws:12", requests_per_minute=60)]
    burst = [_take(spec, rates).admitted for _ in range(60)]
    refill = [_take(spec, rates, now=NOW + s).admitted for s in range(1, 60)]
    early = _take(spec, rates, now=NOW + 59.5)
    assert (all(burst), all(refill), early.admitted) == (True, True, False)


def test_r_lim_1_tokens_reserve_the_estimate_and_refund_the_unused_part():
    # given 1000 tokens per minute and a request reserving 200 input + 600 max_tokens
    rates: dict[RateKey, RateState] = {}
    spec = [LimitSpec("ws:12", tokens_per_minute=1000)]
    first = _take(spec, rates, tokens=800)
    assert first.headers["x-ratelimit-remaining-tokens"] == "200"
    assert not _take(spec, rates, tokens=600).admitted
    # when it used 300: 500 refunded
    key = ("ws:12", Kind.TOKENS)
    rates[key] = settled(rates[key], limit=1000, delta=300 - 800, now=NOW)
    # then
    second = _take(spec, rates, tokens=600)
    assert (second.admitted, second.headers["x-ratelimit-remaining-tokens"]) == (True, "100")


def test_r_lim_1_a_refund_never_moves_the_tat_below_now():
    # given a bucket half full
    state = RateState(level=500.0, at=NOW)
    # when more is refunded than is in it
    refunded = settled(state, limit=1000, delta=-900, now=NOW + 6)
    # then it is empty, not in credit: the next minute holds the limit, not more
    assert refunded == RateState(0.0, NOW + 6)


def test_r_lim_1_an_overrun_is_charged_to_the_next_requests():
    rates = {("ws:12", Kind.TOKENS): settled(None, limit=1000, delta=1200, now=NOW)}
    refused = _take([LimitSpec("ws:12", tokens_per_minute=1000)], rates, tokens=1)
    assert (refused.admitted, refused.retry_after_s) == (False, 13)  # 201 tokens at 1000/min


def test_r_lim_1_a_cost_above_the_limit_never_fits_and_says_a_minute():
    verdict = _take([LimitSpec("ws:12", tokens_per_minute=100)], {}, tokens=101)
    assert (verdict.admitted, verdict.retry_after_s, verdict.refused) == (False, 60, "ws:12/tokens")


def test_r_lim_1_concurrency_admits_while_live_leases_are_below_the_limit():
    spec = [LimitSpec("key:34", concurrent=2)]
    assert _take(spec, {}, live={"key:34": 1}).admitted
    refused = _take(spec, {}, live={"key:34": 2})
    assert (refused.admitted, refused.retry_after_s, refused.refused) == (
        False, 1, "key:34/concurrent",
    )  # fmt: skip
    assert refused.headers == {"Retry-After": "1"}  # no D-29 trio for concurrency


def test_r_lim_1_one_refusing_scope_takes_nothing_anywhere():
    # given the key's one request per minute used, the workspace's untouched
    rates: dict[RateKey, RateState] = {}
    _take([LimitSpec("key:34", requests_per_minute=1)], rates)
    before = dict(rates)
    specs = [
        LimitSpec("ws:12", requests_per_minute=100, tokens_per_minute=10_000, concurrent=5),
        LimitSpec("key:34", requests_per_minute=1),
    ]
    # when
    verdict, updates = admit(plan_checks(specs, tokens=50), rates, {}, now=NOW + 1)
    # then
    assert (verdict.admitted, verdict.refused, updates) == (False, "key:34/requests", {})
    assert rates == before


def test_r_lim_1_retry_after_follows_the_refusal_that_lasts_longest():
    rates: dict[RateKey, RateState] = {}
    specs = [LimitSpec("ws:12", requests_per_minute=2), LimitSpec("key:34", requests_per_minute=1)]
    _take(specs, rates)
    _take(specs[:1], rates)
    verdict = _take(specs, rates)  # ws waits 30 s, key 60 s
    assert (verdict.retry_after_s, verdict.refused) == (60, "key:34/requests")


def test_d_29_headers_show_the_limit_with_the_smallest_remaining_fraction():
    # given the workspace at 90 of 100 left, the key at 5 of 10 (the tightest), tokens too
    rates: dict[RateKey, RateState] = {}
    ws = LimitSpec("ws:12", requests_per_minute=100, tokens_per_minute=1000)
    key = LimitSpec("key:34", requests_per_minute=10, tokens_per_minute=100_000)
    for _ in range(9):
        _take([ws], rates)
    for _ in range(4):
        _take([key], rates)
    # when
    verdict = _take([ws, key], rates, tokens=100)
    # then
    assert verdict.headers == {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "5",
        "x-ratelimit-reset-requests": "30s",  # 5 requests at 6 s each drain
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "900",
        "x-ratelimit-reset-tokens": "6s",
    }


def test_d_29_only_the_kinds_that_applied_send_headers():
    verdict = _take([LimitSpec("ws:12", requests_per_minute=60)], {}, tokens=500)
    assert sorted(verdict.headers) == [
        "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
    ]  # fmt: skip


def test_d_29_a_refusal_reports_the_state_it_left_unchanged():
    rates: dict[RateKey, RateState] = {}
    spec = [LimitSpec("ws:12", requests_per_minute=2)]
    _take(spec, rates)
    _take(spec, rates)
    refused = _take(spec, rates)
    assert refused.headers == {
        "x-ratelimit-limit-requests": "2",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1m0s",
        "Retry-After": "30",
    }


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0.0, "0s"), (0.0001, "1ms"), (0.02, "20ms"), (0.999, "999ms"), (1.0, "1s"),
        (2.052, "2.052s"), (2.5, "2.5s"), (59.9999, "1m0s"), (60.0, "1m0s"),
        (360.0, "6m0s"), (61.5, "1m1.5s"), (3600.0, "1h0m0s"),
    ],
)  # fmt: skip
def test_d_29_reset_is_in_openais_duration_format(seconds, expected):
    assert format_reset(seconds) == expected


def test_r_lim_1_specs_reject_a_repeated_scope_and_a_negative_limit():
    with pytest.raises(ValueError, match="once"):
        plan_checks([LimitSpec("ws:1", requests_per_minute=1)] * 2, tokens=0)
    with pytest.raises(ValueError, match="whole number"):
        LimitSpec("ws:1", tokens_per_minute=-1)


def test_r_lim_1_a_zero_limit_refuses_everything_of_its_kind():
    spec = [LimitSpec("key:34", requests_per_minute=5, tokens_per_minute=0)]
    verdict = _take(spec, {}, tokens=0)
    assert (verdict.admitted, verdict.retry_after_s, verdict.refused) == (
        False,
        60,
        "key:34/tokens",
    )
    assert verdict.headers["x-ratelimit-remaining-tokens"] == "0"
    assert verdict.headers["x-ratelimit-reset-tokens"] == "0s"


arrivals = st.lists(
    st.tuples(st.floats(min_value=0, max_value=300), st.integers(min_value=0, max_value=40)),
    min_size=1,
    max_size=120,
)


@FAST
@given(limit=st.integers(min_value=1, max_value=50), arrivals=arrivals)
def test_r_lim_1_never_more_than_the_burst_plus_what_drained_in_any_window(limit, arrivals):
    """GCRA's bound: over any interval of W s, at most limit + W·limit/60 of cost is admitted
    (the whole minute's burst plus the refill meanwhile); at one instant, the limit."""
    # given
    rates: dict[RateKey, RateState] = {}
    spec = [LimitSpec("ws:1", tokens_per_minute=limit)]
    # when
    taken = []
    for offset, cost in sorted(arrivals):
        if _take(spec, rates, now=NOW + offset, tokens=cost).admitted:
            taken.append((offset, cost))
    # then
    for i, (start, _) in enumerate(taken):
        total = 0
        for end, cost in taken[i:]:
            total += cost
            assert total <= limit + (end - start) * limit / 60 + 1e-6


@FAST
@given(
    levels=st.lists(st.floats(min_value=0, max_value=120), min_size=2, max_size=2),
    tokens=st.integers(min_value=0, max_value=200),
    offset=st.floats(min_value=0, max_value=120),
)
def test_r_lim_1_a_refusal_leaves_every_state_unchanged(levels, tokens, offset):
    # given two scopes with arbitrary buckets
    rates = {
        ("ws:1", Kind.TOKENS): RateState(levels[0], NOW),
        ("key:2", Kind.REQUESTS): RateState(levels[1], NOW),
    }
    before = dict(rates)
    specs = [LimitSpec("ws:1", tokens_per_minute=100), LimitSpec("key:2", requests_per_minute=60)]
    # when
    verdict, updates = admit(plan_checks(specs, tokens=tokens), rates, {}, now=NOW + offset)
    # then
    assert rates == before
    if not verdict.admitted:
        assert updates == {}
    else:
        assert set(updates) == set(rates)


@FAST
@given(
    limit=st.integers(min_value=1, max_value=10_000),
    level=st.floats(min_value=0, max_value=1.0),
    cost_share=st.floats(min_value=0.01, max_value=1.0),
)
def test_r_lim_1_retry_after_is_accurate_to_the_second(limit, level, cost_share):
    """Refused now, refused a second before Retry-After, admitted at it."""
    # given a bucket `level` full and a request of up to the limit
    state = {("ws:1", Kind.TOKENS): RateState(level * limit, NOW)}
    cost = max(1, math.floor(cost_share * limit))
    spec = [LimitSpec("ws:1", tokens_per_minute=limit)]
    refused = _take(spec, dict(state), tokens=cost)
    if refused.admitted:
        return
    # then
    retry = refused.retry_after_s
    assert retry >= 1
    if retry > 1:
        assert not _take(spec, dict(state), tokens=cost, now=NOW + retry - 1 - 1e-3).admitted
    assert _take(spec, dict(state), tokens=cost, now=NOW + retry).admitted
