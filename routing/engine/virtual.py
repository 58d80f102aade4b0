"""Ordering a virtual model's targets (SPEC R-MOD-7).

A virtual model is an alias with a pool of targets (concrete or other virtual models) and a
strategy. This orders the pool; the caller resolves each target in turn and runs `decide` for
it. Pure: the round-robin counter and the random source are the caller's.

`adaptive` (R-EXE-5: power of two choices on latency × in-flight load) needs the process's
load state, so the gateway orders adaptive targets with routing/engine/adaptive.py; here, without
that state, `adaptive` orders as `weighted_random` — the draw proportional to weight that is
its first half — and `strategy_note` says so for a caller that has no load state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from routing.engine.scoring import draw_order

STRATEGIES = ("round_robin", "cost", "weighted_random", "adaptive")
MAX_VIRTUAL_DEPTH = 4  # virtual models may nest; deeper chains are configuration mistakes
ADAPTIVE_NOTE = "Strategy adaptive without load state: targets ordered by weighted_random."


def order_targets(
    strategy: str,
    targets: Sequence[tuple[str, float]],
    *,
    cheapest_price: Mapping[str, float],
    rng: random.Random,
    counter: int,
) -> tuple[str, ...]:
    """The target slugs of `targets` ((slug, weight) in configured order), first choice first.

    - round_robin: the configured order rotated by `counter` (the caller's per-alias count).
    - cost: `cheapest_price[slug]` ascending (USD/1M, the target's cheapest endpoint; a
      target without one goes last), then slug.
    - weighted_random / adaptive: successive draws without replacement, each proportional to
      weight; targets weighing 0 come last in configured order.
    Raises ValueError for an unknown strategy.
    """
    slugs = [slug for slug, _weight in targets]
    if strategy == "round_robin":
        if not slugs:
            return ()
        start = counter % len(slugs)
        return tuple(slugs[start:] + slugs[:start])
    if strategy == "cost":
        return tuple(sorted(slugs, key=lambda s: (cheapest_price.get(s, math.inf), s)))
    if strategy in ("weighted_random", "adaptive"):
        order = draw_order([max(0.0, weight) for _slug, weight in targets], rng)
        return tuple(slugs[i] for i in order)
    raise ValueError(f"unknown virtual-model strategy {strategy!r}; expected one of {STRATEGIES}")


def strategy_note(strategy: str) -> str | None:
    """A sentence for the trace when a strategy is not applied as named."""
    return ADAPTIVE_NOTE if strategy == "adaptive" else None


def arrange_targets(
    ordered: Sequence[str],
    *,
    cooling: frozenset[str],
    unhealthy: frozenset[str],
    pinned: str | None = None,
) -> tuple[tuple[str, ...], str | None]:
    """The strategy's order made to obey health and cooldowns, then the session's pin.

    A virtual model's targets are models, each decided on its own later; a target whose
    every endpoint is cooling would otherwise still be tried as the only survivor of its own
    decision. So, as `decide` does for endpoints: unhealthy targets go to the end (R-EXE-2)
    and targets in cooldown after them, tried only once every other has failed (R-EXE-3),
    and the session's pinned target goes first while it is healthy and not cooling
    (R-EXE-7). Returns the order and the pin's outcome ("honored", "released" or None)."""
    warm = [t for t in ordered if t not in cooling]
    arranged = [t for t in warm if t not in unhealthy] + [t for t in warm if t in unhealthy]
    arranged += [t for t in ordered if t in cooling]
    if pinned is None:
        return tuple(arranged), None
    if pinned not in arranged or pinned in cooling or pinned in unhealthy:
        return tuple(arranged), "released"
    if len(arranged) == 1:
        return tuple(arranged), None
    arranged.remove(pinned)
    return (pinned, *arranged), "honored"
