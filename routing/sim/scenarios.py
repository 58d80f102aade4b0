"""The simulator's scenarios: four synthetic providers of one model and a script of what
goes wrong, when. Each scenario is a function of the run's simulated length and a seeded
`random.Random` (only `flapping` draws from it), so a seed always scripts the same run.

The providers trade price against speed: the cheapest is the slowest. `price_spread`
replaces them with four equally fast providers whose prices differ by about 200×.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from routing.sim.providers import Phase, Provider

# (name, USD/1M input, USD/1M output, median latency ms): blended 3:1 prices 0.2, 0.5, 1, 2.5.
BASE_PROVIDERS = (
    Provider("cheapest", 0.15, 0.35, 900.0),
    Provider("budget", 0.40, 0.80, 700.0),
    Provider("standard", 0.80, 1.60, 600.0),
    Provider("premium", 2.00, 4.00, 500.0),
)
# Same latency, blended prices 0.09, 0.75, 4.25 and 18.75: "same quality, very different prices".
PRICE_SPREAD_PROVIDERS = (
    Provider("cheapest", 0.05, 0.20, 700.0),
    Provider("budget", 0.50, 1.50, 700.0),
    Provider("standard", 3.00, 8.00, 700.0),
    Provider("premium", 15.00, 30.00, 700.0),
)
STORM_S = 60.0  # the 429 storm's length
SLOW_FACTOR = 5.0  # the slow region's latency multiplier
FLAP_PHASE_S = (10.0, 20.0)  # each up or down phase of the flapping provider lasts this long

Script = Callable[[float, random.Random], tuple[Provider, ...]]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    summary: str  # one line, for the table's legend and docs/simulation.md
    script: Script  # (run length in simulated s, rng) -> the providers with their phases


def _with(providers: tuple[Provider, ...], name: str, *phases: Phase) -> tuple[Provider, ...]:
    return tuple(replace(p, phases=phases) if p.name == name else p for p in providers)


def steady(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    return BASE_PROVIDERS


def slow_region(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    start, end = 0.25 * duration_s, 0.625 * duration_s
    return _with(BASE_PROVIDERS, "budget", Phase(start, end, latency_factor=SLOW_FACTOR))


def slow_cheapest(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    """The slow region again, on the provider that cost-minded strategies favour."""
    start, end = 0.25 * duration_s, 0.625 * duration_s
    return _with(BASE_PROVIDERS, "cheapest", Phase(start, end, latency_factor=SLOW_FACTOR))


def rate_limit_storm(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    start = 0.3 * duration_s
    return _with(BASE_PROVIDERS, "cheapest", Phase(start, start + STORM_S, status=429))


def hard_down_key(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    return _with(BASE_PROVIDERS, "budget", Phase(0.0, math.inf, status=401))


def flapping(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    """Up, then down (503), then up … each phase 10–20 s long, scripted a little past the
    horizon: the last Poisson arrivals may come after it."""
    phases: list[Phase] = []
    at, down = 0.0, False
    while at < duration_s * 1.1:
        length = rng.uniform(*FLAP_PHASE_S)
        if down:
            phases.append(Phase(at, at + length, status=503))
        at, down = at + length, not down
    return _with(BASE_PROVIDERS, "cheapest", *phases)


def price_spread(duration_s: float, rng: random.Random) -> tuple[Provider, ...]:
    return PRICE_SPREAD_PROVIDERS


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("steady", "nothing goes wrong", steady),
        Scenario(
            "slow_region",
            f"budget serves {SLOW_FACTOR:g}x slower from 25% to 62.5% of the run",
            slow_region,
        ),
        Scenario(
            "slow_cheapest",
            f"cheapest serves {SLOW_FACTOR:g}x slower from 25% to 62.5% of the run",
            slow_cheapest,
        ),
        Scenario(
            "rate_limit_storm",
            f"cheapest answers 429 for {STORM_S:g} s from 30% of the run",
            rate_limit_storm,
        ),
        Scenario("hard_down_key", "budget answers 401 (a dead key) all run long", hard_down_key),
        Scenario("flapping", "cheapest alternates up / down (503) every 10-20 s", flapping),
        Scenario(
            "price_spread", "equally fast providers, blended prices 0.09 to 18.75", price_spread
        ),
    )
}
