"""Ordering a pinned model's endpoints by routing mode (SPEC R-DEC-6, R-DEC-7, R-DEC-8, D-1).

`balanced` draws without replacement, weight = balanced score × 1/(price+1)²; `price`,
`latency` and `throughput` sort deterministically, ties going to the lower price, then the
lower latency, then the endpoint id. Every survivor comes back as a `Scored` with the
inputs behind its place. Pure: the randomness is the caller's seeded `random.Random`.

Choices (ours, binding for this algorithm version):
- Price is one blended number, USD per 1M tokens = (3 × input + output) / 4: a typical
  chat request reads about three tokens for each one it writes (the 3:1 blend that public
  price comparisons use).
- Balanced factors are normalised as a ratio to the best survivor (best = 1.0; for latency
  best/value, otherwise value/best) and multiply, each raised to its weight, so a factor's
  `contribution` is its multiplier. Latency counts once, split evenly between p50 and p99.
- A missing value normalises to 1.0, the product's identity: the factor drops out of that
  endpoint's score and the score is made of what is known (R-DEC-8). 0.5 would halve the
  weight, the same penalty as being twice as slow — a price for having no data, not
  neutrality. With no live data at all every factor is 1.0 and the weight is exactly R-DEC-7's
  1/(price+1)². A side effect: an unmeasured endpoint keeps its share of traffic, and so gets
  measured.
- No normalised value falls below MIN_NORMALISED, so every healthy endpoint keeps a chance.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence

from routing.types import (
    EndpointInfo,
    EndpointStats,
    Factor,
    LiveState,
    Mode,
    RoutingRequest,
    Scored,
)

UNKNOWN_LATENCY_MS = 500.0  # R-DEC-5 counts an endpoint with no recorded latency as 500 ms
MIN_NORMALISED = 0.05  # as GM's min_weight_fraction: no healthy endpoint drops to zero
HEADROOM = 2.0  # a window twice the request's tokens is a full token fit
NO_STATS = EndpointStats()

# (factor, exponent): reliability, throughput and token fit once; latency once, split.
BALANCED_WEIGHTS = (
    ("reliability", 1.0),
    ("latency_p50", 0.5),
    ("latency_p99", 0.5),
    ("throughput", 1.0),
    ("token_fit", 1.0),
)
_LOWER_IS_BETTER = frozenset({"latency_p50", "latency_p99"})


def blended_price(endpoint: EndpointInfo) -> float:
    """USD per 1M tokens, input and output blended 3:1."""
    return (3.0 * endpoint.price_input + endpoint.price_output) / 4.0


def inverse_square_price(price: float) -> float:
    """R-DEC-7's weight: free and cheap endpoints get most of the traffic."""
    return 1.0 / (price + 1.0) ** 2


def stats_of(live: LiveState, endpoint_id: str) -> EndpointStats:
    return live.stats.get(endpoint_id, NO_STATS)


def latency_ms(stats: EndpointStats) -> float:
    """p50 latency, UNKNOWN_LATENCY_MS when none is recorded."""
    p50 = stats.latency_p50_ms
    return UNKNOWN_LATENCY_MS if p50 is None else p50


def token_fit(endpoint: EndpointInfo, request: RoutingRequest) -> float:
    """1.0 when the window holds HEADROOM × the request's tokens, less as it gets tight."""
    needed = request.input_tokens + request.output_tokens
    if needed <= 0:
        return 1.0
    return min(1.0, endpoint.context_window / (HEADROOM * needed))


def draw_order(weights: Sequence[float], rng: random.Random) -> list[int]:
    """Indices in the order of successive draws without replacement, each draw proportional
    to weight (Efraimidis–Spirakis keys: one `rng.random()` per item, in input order).
    Zero weights come after every positive one, in input order."""
    keyed: list[tuple[float, int]] = []
    for index, weight in enumerate(weights):
        uniform = 1.0 - rng.random()  # (0, 1]: log() is defined
        keyed.append((-math.log(uniform) / weight if weight > 0 else math.inf, index))
    keyed.sort()
    return [index for _key, index in keyed]


def order_by_mode(
    survivors: Sequence[EndpointInfo],
    request: RoutingRequest,
    live: LiveState,
    rng: random.Random,
) -> list[Scored]:
    """Every survivor, scored and in the order `request.mode` gives (before demotions)."""
    if request.mode is Mode.BALANCED:
        return _balanced(survivors, request, live, rng)
    return _sorted(survivors, request.mode, live)


def _balanced(
    survivors: Sequence[EndpointInfo],
    request: RoutingRequest,
    live: LiveState,
    rng: random.Random,
) -> list[Scored]:
    if not survivors:
        return []
    rows = [_balanced_inputs(e, request, stats_of(live, e.id)) for e in survivors]
    columns = [
        _normalise(column, name not in _LOWER_IS_BETTER)
        for column, (name, _weight) in zip(zip(*rows, strict=True), BALANCED_WEIGHTS, strict=True)
    ]
    made: dict[tuple[str, float | None, float], Factor] = {}
    scored = [
        _balanced_scored(endpoint, row, normalised, made)
        for endpoint, row, normalised in zip(
            survivors, rows, zip(*columns, strict=True), strict=True
        )
    ]
    return [scored[i] for i in draw_order([s.score for s in scored], rng)]


def _balanced_scored(
    endpoint: EndpointInfo,
    row: Sequence[float | None],
    normalised: Sequence[float],
    made: dict[tuple[str, float | None, float], Factor],
) -> Scored:
    """score = 1/(price+1)² × Π normalised^weight. `made` holds this decision's factors:
    most repeat across endpoints (every missing value is the same neutral factor), and a
    frozen dataclass costs more to build than a look-up."""
    multiplier = inverse_square_price(blended_price(endpoint))
    score = multiplier
    factors = []
    for (name, weight), value, norm in zip(BALANCED_WEIGHTS, row, normalised, strict=True):
        factor = made.get((name, value, norm))
        if factor is None:
            factor = made[name, value, norm] = Factor(name, value, norm, weight, norm**weight)
        score *= factor.contribution
        factors.append(factor)
    return Scored(endpoint.id, score, tuple(factors), (("inverse_square_price", multiplier),))


def _balanced_inputs(
    endpoint: EndpointInfo, request: RoutingRequest, stats: EndpointStats
) -> tuple[float | None, ...]:
    error_rate = stats.error_rate
    return (
        None if error_rate is None else 1.0 - error_rate,
        stats.latency_p50_ms,
        stats.latency_p99_ms,
        stats.throughput_tps,
        token_fit(endpoint, request),
    )


def _normalise(values: Sequence[float | None], higher_is_better: bool) -> list[float]:
    """Ratio to the best known value among the survivors; missing → 1.0 (see module doc)."""
    known = [v for v in values if v is not None]
    if not known:
        return [1.0] * len(values)
    best = max(known) if higher_is_better else min(known)
    return [
        1.0 if v is None else max(MIN_NORMALISED, _ratio(v, best, higher_is_better)) for v in values
    ]


def _ratio(value: float, best: float, higher_is_better: bool) -> float:
    if higher_is_better:
        return value / best if best > 0 else 1.0
    return best / value if value > 0 else 1.0


# Deterministic modes: rows are ((price, latency, throughput), endpoint); ties go to the
# lower price, the lower latency, then the endpoint id.
_SortRow = tuple[tuple[float, float, float], EndpointInfo]
_SORT_FACTORS = ("price", "latency_p50", "throughput")
_SORT_KEYS: dict[Mode, Callable[[_SortRow], tuple[float | str, ...]]] = {
    Mode.PRICE: lambda row: (row[0][0], row[0][1], row[1].id),
    Mode.LATENCY: lambda row: (row[0][1], row[0][0], row[1].id),
    Mode.THROUGHPUT: lambda row: (-row[0][2], row[0][0], row[0][1], row[1].id),
}
_SORT_PRIMARY = {Mode.PRICE: 0, Mode.LATENCY: 1, Mode.THROUGHPUT: 2}


def _sorted(survivors: Sequence[EndpointInfo], mode: Mode, live: LiveState) -> list[Scored]:
    """`price`, `latency`, `throughput`: deterministic. An unknown latency counts as 500 ms,
    an unknown throughput as the survivors' median (neither rewarded nor punished)."""
    known_tps = [t for e in survivors if (t := stats_of(live, e.id).throughput_tps) is not None]
    neutral_tps = statistics.median(known_tps) if known_tps else 0.0
    rows: list[_SortRow] = []
    for endpoint in survivors:
        stats = stats_of(live, endpoint.id)
        tps = neutral_tps if stats.throughput_tps is None else stats.throughput_tps
        rows.append(((blended_price(endpoint), latency_ms(stats), tps), endpoint))
    rows.sort(key=_SORT_KEYS[mode])
    primary = _SORT_PRIMARY[mode]
    normalised = _normalise([values[primary] for values, _e in rows], mode is Mode.THROUGHPUT)
    return [
        Scored(endpoint.id, norm, _sort_factors(values, primary, norm))
        for (values, endpoint), norm in zip(rows, normalised, strict=True)
    ]


def _sort_factors(
    values: tuple[float, float, float], primary: int, norm: float
) -> tuple[Factor, ...]:
    """The mode's key with weight 1 (score = its ratio to the best); the tie-breaks' inputs
    with weight 0."""
    return tuple(
        Factor(name, value, norm, 1.0, norm) if i == primary else Factor(name, value, 0.0, 0.0, 0.0)
        for i, (name, value) in enumerate(zip(_SORT_FACTORS, values, strict=True))
    )
