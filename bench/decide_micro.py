"""`python -m bench.decide_micro [--decisions N]`: how fast the pure routing decision is.

A fixed 50-endpoint catalog (10 models × 5 providers, live stats for half the endpoints, one
unhealthy, an EU-hosted policy that rejects the non-EU ones) and three runs of N decisions:
balanced for a pinned model (its 5 endpoints, the common case), balanced over all 50 at once
(a worst case for one model), and auto over all 50. Prints decisions per second for each.
Target: 10,000 pinned decisions in under 1 s.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from routing.engine.decide import decide
from routing.engine.types import EndpointInfo, EndpointStats, LiveState, PolicyView, RoutingRequest

MODELS = 10
PROVIDERS = 5
CLASSES = ("eu-owned", "eu-hosted", "any")
NOW = 1_767_225_600.0


def build_catalog(rng: random.Random) -> list[EndpointInfo]:
    catalog = []
    for m in range(MODELS):
        for p in range(PROVIDERS):
            catalog.append(
                EndpointInfo(
                    id=f"ep-{m}-{p}",
                    provider=f"prov-{p}",
                    model=f"vendor/model-{m}",
                    upstream_model=f"model-{m}",
                    region=rng.choice(("eu-west-1", "eu-central-1")),
                    status="active",
                    sovereignty_class=CLASSES[(m + p) % 3],
                    partner=False,
                    price_input=rng.uniform(0.0, 5.0),
                    price_output=rng.uniform(0.0, 15.0),
                    capabilities=frozenset({"text", "tools"}),
                    context_window=rng.choice((8192, 32_768, 131_072)),
                    parameters_b=rng.choice((8.0, 70.0, 405.0, None)),
                    strong_languages=frozenset(rng.sample(("de", "en", "fr", "it", "es"), 3)),
                    task_tags=frozenset({"code"} if m % 4 == 0 else ()),
                    documentation_completeness=rng.random(),
                )
            )
    return catalog


def build_live(catalog: Sequence[EndpointInfo], rng: random.Random) -> LiveState:
    stats = {
        e.id: EndpointStats(
            latency_p50_ms=rng.uniform(80, 900),
            latency_p90_ms=rng.uniform(900, 1500),
            latency_p99_ms=rng.uniform(1500, 4000),
            throughput_tps=rng.uniform(20, 200),
            error_rate=rng.uniform(0, 0.1),
            samples=100,
        )
        for e in catalog[::2]
    }
    return LiveState(stats=stats, unhealthy=frozenset({catalog[1].id}))


def measure(label: str, decisions: int, run: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for i in range(decisions):
        run(i)
    elapsed = time.perf_counter() - started
    rate = decisions / elapsed
    print(f"{label:<37} {decisions:>6} in {elapsed:6.3f} s  {rate:>8,.0f} decisions/s")
    return elapsed


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.decide_micro", description=__doc__)
    parser.add_argument("--decisions", type=int, default=10_000)
    n = parser.parse_args(argv).decisions
    setup = random.Random(0)
    catalog = build_catalog(setup)
    live = build_live(catalog, setup)
    policy = PolicyView(allowed_residency=frozenset({"eu-owned", "eu-hosted"}))
    by_model = {
        f"vendor/model-{m}": [e for e in catalog if e.model == f"vendor/model-{m}"]
        for m in range(MODELS)
    }
    pinned = [
        RoutingRequest(requested_model=slug, model=slug, input_tokens=2000, output_tokens=500)
        for slug in by_model
    ]
    auto = RoutingRequest(
        requested_model="auto", model=None, auto=True, task="code", language="de", input_tokens=2000
    )
    rng = random.Random(1)
    print(f"catalog: {len(catalog)} endpoints, live stats for {len(live.stats)}")
    endpoints = [by_model[request.model or ""] for request in pinned]
    measure(
        "balanced, pinned model (5 endpoints)",
        n,
        lambda i: decide(endpoints[i % MODELS], pinned[i % MODELS], policy, live, rng, NOW),
    )
    measure(
        "balanced, all 50 endpoints",
        n,
        lambda i: decide(catalog, pinned[i % MODELS], policy, live, rng, NOW),
    )
    measure("auto, all 50 endpoints", n, lambda i: decide(catalog, auto, policy, live, rng, NOW))


if __name__ == "__main__":
    main()
