"""The rollout guard's verdict (SPEC R-BEY-4, D-26): over one window of traffic, is the
watched node (a canary) worse than its baseline by more than the route allows — in error
rate, p99 latency or cost per request? The gateway counts the window and acts on a breach
(rolls back, audits); this module only compares, and hands back every figure it compared
for the audit event. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from routing.engine.routes.graph import MICROS_PER_USD, RolloutGuard

# A ratio's denominator is at least this, so a zero baseline still gives a finite ratio
# (JSON has no infinity, and the audit event carries the ratio): a baseline at 0 ms or
# $0 per request is compared as if it were 1 ms or 1 micro-dollar. A watched side that is
# zero too gives ratio 0, never a breach; a watched side that costs anything measurable
# against a free baseline breaches, which is what a free baseline means.
MIN_P99_MS = 1.0
MIN_COST_PER_REQUEST_MICROS = 1.0

Number = int | float | None


@dataclass(frozen=True, slots=True)
class WindowStats:
    """One side's traffic over the guard's window."""

    requests: int
    errors: int  # reliability failures (R-EXE-4), not the client's own 4xx
    p99_ms: float | None  # None: no latency sample in the window
    cost_micros: int  # the window's total cost


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    breached: bool  # roll back
    ready: bool  # both sides had min_requests; never breached before
    reasons: tuple[str, ...]  # each bound breached, or why it is not ready yet
    numbers: dict[str, Number] = field(default_factory=dict)  # every figure compared


def guard_verdict(guard: RolloutGuard, watched: WindowStats, baseline: WindowStats) -> GuardVerdict:
    """Breached when the watched node's error rate exceeds the baseline's by more than
    `max_error_rate_delta`, or its p99 over the baseline's is above `max_p99_ratio`, or its
    cost per request over the baseline's is above `max_cost_ratio` — each strictly above,
    each only when configured, p99 only when both sides have one. Not ready (and not
    breached) until both sides have `min_requests` in the window."""
    numbers: dict[str, Number] = {
        "min_requests": guard.min_requests,
        "watched_requests": watched.requests,
        "baseline_requests": baseline.requests,
    }
    short = [
        f"{label} {name} has {stats.requests} of the {guard.min_requests} requests needed"
        for label, name, stats in (
            ("watched", guard.node, watched),
            ("baseline", guard.baseline, baseline),
        )
        if stats.requests < guard.min_requests
    ]
    if short:
        return GuardVerdict(False, False, tuple(f"not ready: {s}" for s in short), numbers)
    reasons = [
        *_error_rate(guard, watched, baseline, numbers),
        *_p99(guard, watched, baseline, numbers),
        *_cost(guard, watched, baseline, numbers),
    ]
    return GuardVerdict(bool(reasons), True, tuple(reasons), numbers)


def _error_rate(
    guard: RolloutGuard, watched: WindowStats, baseline: WindowStats, numbers: dict[str, Number]
) -> list[str]:
    mine, theirs = watched.errors / watched.requests, baseline.errors / baseline.requests
    delta = mine - theirs
    numbers.update(
        watched_error_rate=mine,
        baseline_error_rate=theirs,
        error_rate_delta=delta,
        max_error_rate_delta=guard.max_error_rate_delta,
    )
    bound = guard.max_error_rate_delta
    if bound is None or delta <= bound:
        return []
    return [
        f"error rate {mine:.1%} on {guard.node} vs {theirs:.1%} on {guard.baseline}: "
        f"+{delta * 100:.1f} points > {bound * 100:.1f} allowed"
    ]


def _p99(
    guard: RolloutGuard, watched: WindowStats, baseline: WindowStats, numbers: dict[str, Number]
) -> list[str]:
    numbers.update(
        watched_p99_ms=watched.p99_ms,
        baseline_p99_ms=baseline.p99_ms,
        p99_ratio=None,
        max_p99_ratio=guard.max_p99_ratio,
    )
    if watched.p99_ms is None or baseline.p99_ms is None:
        return []  # nothing to compare: no bound can be said breached
    ratio = watched.p99_ms / max(baseline.p99_ms, MIN_P99_MS)
    numbers["p99_ratio"] = ratio
    bound = guard.max_p99_ratio
    if bound is None or ratio <= bound:
        return []
    return [
        f"p99 {watched.p99_ms:.0f} ms on {guard.node} vs {baseline.p99_ms:.0f} ms on "
        f"{guard.baseline}: ratio {ratio:.2f} > {bound:g}"
    ]


def _cost(
    guard: RolloutGuard, watched: WindowStats, baseline: WindowStats, numbers: dict[str, Number]
) -> list[str]:
    mine = watched.cost_micros / watched.requests
    theirs = baseline.cost_micros / baseline.requests
    ratio = mine / max(theirs, MIN_COST_PER_REQUEST_MICROS)
    numbers.update(
        watched_cost_per_request_micros=mine,
        baseline_cost_per_request_micros=theirs,
        cost_ratio=ratio,
        max_cost_ratio=guard.max_cost_ratio,
    )
    bound = guard.max_cost_ratio
    if bound is None or ratio <= bound:
        return []
    mine_usd, theirs_usd = mine / MICROS_PER_USD, theirs / MICROS_PER_USD
    return [
        f"cost per request ${mine_usd:.6f} on {guard.node} vs ${theirs_usd:.6f} on "
        f"{guard.baseline}: ratio {ratio:.2f} > {bound:g}"
    ]
