"""The rollout guard's verdict (SPEC R-BEY-4, D-26): not ready below `min_requests`, each
bound breached only when strictly exceeded, zero baselines, and every compared figure kept
for the audit event. No database."""

import pytest

from routing.engine.routes import GuardVerdict, RolloutGuard, WindowStats, guard_verdict

GUARD = RolloutGuard("canary", "small", 200, max_error_rate_delta=0.02, max_p99_ratio=1.5,
                     max_cost_ratio=1.3)  # fmt: skip
BASELINE = WindowStats(requests=1000, errors=10, p99_ms=1000.0, cost_micros=1_000_000)
HEALTHY = WindowStats(requests=200, errors=2, p99_ms=1200.0, cost_micros=240_000)


def test_r_bey_4_a_healthy_canary_is_ready_and_not_breached():
    # when
    verdict = guard_verdict(GUARD, HEALTHY, BASELINE)
    # then
    assert verdict == GuardVerdict(
        breached=False,
        ready=True,
        reasons=(),
        numbers={
            "min_requests": 200,
            "watched_requests": 200,
            "baseline_requests": 1000,
            "watched_error_rate": 0.01,
            "baseline_error_rate": 0.01,
            "error_rate_delta": 0.0,
            "max_error_rate_delta": 0.02,
            "watched_p99_ms": 1200.0,
            "baseline_p99_ms": 1000.0,
            "p99_ratio": 1.2,
            "max_p99_ratio": 1.5,
            "watched_cost_per_request_micros": 1200.0,
            "baseline_cost_per_request_micros": 1000.0,
            "cost_ratio": 1.2,
            "max_cost_ratio": 1.3,
        },
    )


@pytest.mark.parametrize(
    ("watched", "baseline", "reasons"),
    [(WindowStats(199, 0, 900.0, 0), BASELINE,
      ("not ready: watched canary has 199 of the 200 requests needed",)),
     (HEALTHY, WindowStats(50, 0, 900.0, 0),
      ("not ready: baseline small has 50 of the 200 requests needed",)),
     (WindowStats(0, 0, None, 0), WindowStats(0, 0, None, 0),
      ("not ready: watched canary has 0 of the 200 requests needed",
       "not ready: baseline small has 0 of the 200 requests needed"))],
)  # fmt: skip
def test_d_26_no_verdict_until_both_sides_have_min_requests(watched, baseline, reasons):
    # given: the watched side failing everything, still too few requests to judge
    # when
    verdict = guard_verdict(GUARD, watched, baseline)
    # then
    assert (verdict.breached, verdict.ready, verdict.reasons) == (False, False, reasons)
    assert verdict.numbers == {"min_requests": 200, "watched_requests": watched.requests,
                               "baseline_requests": baseline.requests}  # fmt: skip


# (case, watched stats, the one reason)
BREACHES = [
    ("error rate", WindowStats(200, 8, 1000.0, 200_000),
     "error rate 4.0% on canary vs 1.0% on small: +3.0 points > 2.0 allowed"),
    ("p99", WindowStats(200, 2, 1600.0, 200_000),
     "p99 1600 ms on canary vs 1000 ms on small: ratio 1.60 > 1.5"),
    ("cost per request", WindowStats(200, 2, 1000.0, 280_000),
     "cost per request $0.001400 on canary vs $0.001000 on small: ratio 1.40 > 1.3"),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "watched", "reason"), BREACHES)
def test_r_bey_4_each_bound_breaches_on_its_own(_case, watched, reason):
    # when
    verdict = guard_verdict(GUARD, watched, BASELINE)
    # then
    assert (verdict.breached, verdict.ready, verdict.reasons) == (True, True, (reason,))


def test_r_bey_4_every_breached_bound_is_a_reason():
    # when
    verdict = guard_verdict(GUARD, WindowStats(400, 40, 3000.0, 2_000_000), BASELINE)
    # then
    assert verdict.reasons == (
        "error rate 10.0% on canary vs 1.0% on small: +9.0 points > 2.0 allowed",
        "p99 3000 ms on canary vs 1000 ms on small: ratio 3.00 > 1.5",
        "cost per request $0.005000 on canary vs $0.001000 on small: ratio 5.00 > 1.3",
    )
    assert verdict.breached is True


def test_a_value_exactly_on_its_bound_is_not_a_breach():
    # given: +2 points, p99 ×1.5, cost ×1.25, each within its bound
    watched = WindowStats(requests=500, errors=15, p99_ms=1500.0, cost_micros=625_000)
    baseline = WindowStats(requests=500, errors=5, p99_ms=1000.0, cost_micros=500_000)
    guard = RolloutGuard("canary", "small", 200, max_error_rate_delta=0.03, max_p99_ratio=1.5,
                         max_cost_ratio=1.25)  # fmt: skip
    # when
    verdict = guard_verdict(guard, watched, baseline)
    # then
    assert (verdict.breached, verdict.reasons) == (False, ())


def test_bounds_left_unset_are_not_checked():
    # given
    guard = RolloutGuard("canary", "small", 200, max_p99_ratio=1.5)
    # when
    verdict = guard_verdict(guard, WindowStats(200, 200, 1000.0, 10**9), BASELINE)
    # then: every error and a huge cost, but only p99 is bounded
    assert (verdict.breached, verdict.reasons) == (False, ())
    assert verdict.numbers["error_rate_delta"] == 0.99
    assert verdict.numbers["max_error_rate_delta"] is None


def test_without_latency_samples_p99_is_not_compared():
    # when
    verdict = guard_verdict(GUARD, WindowStats(200, 2, 9000.0, 200_000),
                            WindowStats(1000, 10, None, 1_000_000))  # fmt: skip
    # then
    assert (verdict.breached, verdict.numbers["p99_ratio"]) == (False, None)


@pytest.mark.parametrize(
    ("watched_cost", "breached", "ratio"),
    [(0, False, 0.0), (200, False, 1.0), (400, True, 2.0), (2_000_000, True, 10_000.0)],
)  # fmt: skip
def test_a_free_baseline_is_compared_as_one_micro_dollar_per_request(watched_cost, breached, ratio):
    # given: the baseline cost nothing in the window
    baseline = WindowStats(requests=1000, errors=10, p99_ms=1000.0, cost_micros=0)
    watched = WindowStats(requests=200, errors=2, p99_ms=1000.0, cost_micros=watched_cost)
    # when
    verdict = guard_verdict(GUARD, watched, baseline)
    # then
    assert (verdict.breached, verdict.numbers["cost_ratio"]) == (breached, ratio)


def test_a_zero_baseline_p99_is_compared_as_one_millisecond():
    # given
    baseline = WindowStats(requests=1000, errors=10, p99_ms=0.0, cost_micros=1_000_000)
    # when
    fast = guard_verdict(GUARD, WindowStats(200, 2, 1.0, 200_000), baseline)
    slow = guard_verdict(GUARD, WindowStats(200, 2, 2.0, 200_000), baseline)
    # then
    assert (fast.breached, fast.numbers["p99_ratio"]) == (False, 1.0)
    assert (slow.breached, slow.numbers["p99_ratio"]) == (True, 2.0)
