"""Synthetic providers of the routing simulator: an endpoint's prices, its latency
distribution, and a script of what it does over simulated time.

A provider answers every call with a log-normal latency around its median. A script is a
tuple of phases; inside a phase every call either takes `latency_factor` times as long or
fails at once with the phase's HTTP status (429 storm, 401 for a dead key, 503 while down).
Pure: the caller passes the simulated time and a seeded `random.Random`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from routing.engine.types import EndpointInfo

OK = 200
# A refusal (429, 401, 503) comes back in tens of milliseconds: no tokens are generated.
FAILURE_MEDIAN_MS = 40.0
FAILURE_SIGMA = 0.3
# σ of the log-normal latency: p99 ≈ median × e^(2.33σ) ≈ 2 × median at 0.3.
DEFAULT_SIGMA = 0.3
CONTEXT_WINDOW = 128_000  # large enough that no simulated request is filtered for its size


@dataclass(frozen=True, slots=True)
class Phase:
    """From `start_s` to `end_s` (simulated seconds), every call answers `status` — or, with
    status OK, is served `latency_factor` times slower than usual."""

    start_s: float
    end_s: float
    status: int = OK
    latency_factor: float = 1.0


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    price_input: float  # USD per 1M tokens
    price_output: float
    median_ms: float  # whole response, non-streaming
    sigma: float = DEFAULT_SIGMA
    phases: tuple[Phase, ...] = ()

    @property
    def endpoint_id(self) -> str:
        return f"ep-{self.name}"

    def phase_at(self, now_s: float) -> Phase | None:
        for phase in self.phases:
            if phase.start_s <= now_s < phase.end_s:
                return phase
        return None


def respond(provider: Provider, now_s: float, rng: random.Random) -> tuple[int, float]:
    """(HTTP status, latency in ms) of one call to `provider` started at `now_s`."""
    phase = provider.phase_at(now_s)
    if phase is not None and phase.status != OK:
        return phase.status, rng.lognormvariate(math.log(FAILURE_MEDIAN_MS), FAILURE_SIGMA)
    factor = phase.latency_factor if phase is not None else 1.0
    return OK, factor * rng.lognormvariate(math.log(provider.median_ms), provider.sigma)


def endpoint_of(provider: Provider, model: str) -> EndpointInfo:
    """The catalog endpoint the router sees for `provider` serving `model`."""
    return EndpointInfo(
        id=provider.endpoint_id,
        provider=provider.name,
        model=model,
        upstream_model=model.rsplit("/", 1)[-1],
        region="eu-west-1",
        status="active",
        sovereignty_class="any",
        partner=False,
        price_input=provider.price_input,
        price_output=provider.price_output,
        capabilities=frozenset({"text"}),
        context_window=CONTEXT_WINDOW,
    )


def cost_usd(provider: Provider, input_tokens: int, output_tokens: int) -> float:
    """What one successful call costs; prices are USD per 1M tokens (failures are free)."""
    return (input_tokens * provider.price_input + output_tokens * provider.price_output) / 1e6
