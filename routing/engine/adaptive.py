"""The adaptive strategy (SPEC R-EXE-5, GM): power of two choices on peak-EWMA load.

Each target (a virtual model's concrete models) keeps a latency estimate, a peak-EWMA of
every upstream attempt that served it (time to first byte for streams; retries and
failovers included), and an in-flight count. To pick, draw two distinct targets with
probability proportional to their weights and take the one with the lower load =
estimate × (in-flight + 1). The rest follow by the same rule, so the list is a full
fallback order.

Peak-EWMA, after Finagle and Linkerd: a sample above the estimate replaces it at once
(react to a slowdown immediately), a sample below pulls it down with weight
1 − exp(−Δt/τ), so recovery is gradual and depends on elapsed time, not request count.
τ = 10 s (Finagle's default decay time). An endpoint never measured starts at
`UNMEASURED_MS`, optimistic enough that new targets get tried.

Weights: the configured weight × health (1 − recorded error rate) for objective `latency`;
× 1/(price+1)² too for `balanced` (default) and `cost` (`cost` squares the price term once
more). Every target not in cooldown keeps at least `min_weight_fraction` of the heaviest
candidate's weight. State lives in `AdaptiveState` per process; the functions here are pure.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DECAY_S = 10.0  # τ of the peak-EWMA
UNMEASURED_MS = 100.0  # estimate of a target with no sample yet
MIN_WEIGHT_FRACTION = 0.05  # GM default
WARM_CACHE_WEIGHT = 8.0  # GM default: the target that last served the session weighs ×8 …
WARM_CACHE_TTL_S = 600.0  # … for 10 minutes (R-EXE-6)
OBJECTIVES = ("balanced", "cost", "latency")  # how price enters a target's weight (R-EXE-5)


@dataclass(slots=True)
class PeakEwma:
    estimate_ms: float = UNMEASURED_MS
    stamp: float | None = None  # time of the last sample (the caller's clock, seconds)

    def observe(self, latency_ms: float, now: float) -> None:
        if self.stamp is None or latency_ms > self.estimate_ms:
            self.estimate_ms = latency_ms
        else:
            keep = math.exp(-max(0.0, now - self.stamp) / DECAY_S)
            self.estimate_ms = self.estimate_ms * keep + latency_ms * (1.0 - keep)
        self.stamp = now


@dataclass(slots=True)
class AdaptiveState:
    """Per-process load state: latency estimates and in-flight counts by target."""

    ewma: dict[str, PeakEwma] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)

    def started(self, target: str) -> None:
        self.in_flight[target] = self.in_flight.get(target, 0) + 1

    def finished(self, target: str, latency_ms: float | None, now: float) -> None:
        self.in_flight[target] = max(0, self.in_flight.get(target, 0) - 1)
        if latency_ms is not None:
            self.ewma.setdefault(target, PeakEwma()).observe(latency_ms, now)

    def load(self, target: str) -> float:
        estimate = self.ewma[target].estimate_ms if target in self.ewma else UNMEASURED_MS
        return estimate * (self.in_flight.get(target, 0) + 1)


def shaped_weights(
    targets: Sequence[tuple[str, float]],
    *,
    objective: str,
    price: Mapping[str, float],
    error_rate: Mapping[str, float],
    cooling: frozenset[str],
    min_weight_fraction: float = MIN_WEIGHT_FRACTION,
    warm: str | None = None,
    warm_weight: float = WARM_CACHE_WEIGHT,
) -> list[float]:
    """Weights as the objective shapes them, with the floor for targets not cooling.
    `warm`: the target that last served the request's session (R-EXE-6); its weight is
    multiplied by `warm_weight` unless it is cooling (a target in cooldown loses it)."""
    weights = []
    for slug, weight in targets:
        health = 1.0 - error_rate.get(slug, 0.0)
        shaped = max(0.0, weight) * health
        if objective in ("balanced", "cost"):
            inverse_square = 1.0 / (price.get(slug, 0.0) + 1.0) ** 2
            shaped *= inverse_square * (inverse_square if objective == "cost" else 1.0)
        if slug == warm and slug not in cooling:
            shaped *= warm_weight
        weights.append(shaped)
    floor = max(weights, default=0.0) * min_weight_fraction
    return [
        max(w, floor) if slug not in cooling else w
        for (slug, _), w in zip(targets, weights, strict=True)
    ]


def p2c_order(
    targets: Sequence[str], weights: Sequence[float], loads: Mapping[str, float], rng: random.Random
) -> tuple[str, ...]:
    """Repeated power of two choices without replacement: the full attempt order."""
    pool = list(range(len(targets)))
    order: list[str] = []
    while pool:
        if len(pool) == 1:
            order.append(targets[pool.pop()])
            break
        first = _draw(pool, weights, rng)
        second = _draw([i for i in pool if i != first], weights, rng)
        # Ties go to the first draw, itself random, so equal targets share fairly.
        chosen = second if loads[targets[second]] < loads[targets[first]] else first
        order.append(targets[chosen])
        pool.remove(chosen)
    return tuple(order)


def _draw(pool: Sequence[int], weights: Sequence[float], rng: random.Random) -> int:
    total = sum(weights[i] for i in pool)
    if total <= 0:
        return pool[0]
    point = rng.random() * total
    for index in pool:
        point -= weights[index]
        if point < 0:
            return index
    return pool[-1]


def adaptive_order(
    targets: Sequence[tuple[str, float]],
    *,
    state: AdaptiveState,
    price: Mapping[str, float],
    error_rate: Mapping[str, float],
    cooling: frozenset[str],
    rng: random.Random,
    objective: str = "balanced",
    min_weight_fraction: float = MIN_WEIGHT_FRACTION,
    warm: str | None = None,
) -> tuple[str, ...]:
    """R-EXE-5 end to end: shape the weights, then P2C on the targets' current loads.
    The model chain (routing/engine/chain.py) and the simulator (routing/sim) both call this."""
    weights = shaped_weights(
        targets,
        objective=objective,
        price=price,
        error_rate=error_rate,
        cooling=cooling,
        min_weight_fraction=min_weight_fraction,
        warm=warm,
    )
    slugs = [slug for slug, _weight in targets]
    return p2c_order(slugs, weights, {s: state.load(s) for s in slugs}, rng)
