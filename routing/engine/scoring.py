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
from dataclasses import fields
from typing import Any, cast

from routing.engine.types import (
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


# A frozen dataclass's __init__ stores each field through object.__setattr__ (~0.4 µs for a
# Factor), and a decision over 50 endpoints builds about a hundred Factors and fifty Scoreds:
# the largest single cost of `decide`. `factor_column` and `make_scored` store the same fields
# through the slots' own descriptors, in about half the time. That skips nothing while both
# stay plain frozen slots dataclasses (no __post_init__), which `_slot_setters` checks once,
# at import.
def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    if tuple(f.name for f in fields(cls)) != names or hasattr(cls, "__post_init__"):
        raise ImportError(
            f"routing.engine.types.{cls.__name__} changed shape: update routing.engine.scoring"
        )
    return tuple(getattr(cls, name).__set__ for name in names)


_new = object.__new__
_set_name, _set_value, _set_normalized, _set_weight, _set_contribution = _slot_setters(
    Factor, ("name", "value", "normalized", "weight", "contribution")
)
_set_endpoint_id, _set_score, _set_factors, _set_multipliers, _set_demoted = _slot_setters(
    Scored, ("endpoint_id", "score", "factors", "multipliers", "demoted")
)


def make_scored(
    endpoint_id: str,
    score: float,
    factors: tuple[Factor, ...] = (),
    multipliers: tuple[tuple[str, float], ...] = (),
    demoted: str | None = None,
) -> Scored:
    """`Scored(endpoint_id, score, factors, multipliers, demoted)`, built sooner."""
    scored = _new(Scored)
    _set_endpoint_id(scored, endpoint_id)
    _set_score(scored, score)
    _set_factors(scored, factors)
    _set_multipliers(scored, multipliers)
    _set_demoted(scored, demoted)
    return scored


def factor_column(
    name: str,
    weight: float,
    values: Sequence[float | None],
    normalise: Callable[[list[float | None]], list[float]],
    *,
    multiplies: bool,
) -> list[Factor]:
    """Each survivor's factor `name`, for its value in `values`.

    `normalise` maps values to their normalised form. The contribution is normalised^weight
    for a factor that `multiplies` the score (balanced), else weight × normalised (auto).

    Equal values share one Factor, built once: many repeat (every missing value, fit levels,
    a token fit of 1.0), and a look-up costs less than a Factor. Only the distinct values are
    normalised, which changes no result: their best, lowest and highest are those of all.
    """
    made: dict[float | None, Any] = dict.fromkeys(values)  # first-seen order
    distinct = list(made)
    for value, norm in zip(distinct, normalise(distinct), strict=True):
        # Factor(name, value, norm, weight, contribution), built sooner (see _slot_setters)
        factor = made[value] = _new(Factor)
        _set_name(factor, name)
        _set_value(factor, value)
        _set_normalized(factor, norm)
        _set_weight(factor, weight)
        _set_contribution(factor, norm**weight if multiplies else weight * norm)
    return [made[value] for value in values]


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
    return token_fits([endpoint], request)[0]


def token_fits(endpoints: Sequence[EndpointInfo], request: RoutingRequest) -> list[float]:
    """`token_fit` of each endpoint; the request's side is worked out once."""
    needed = request.input_tokens + request.output_tokens
    if needed <= 0:
        return [1.0] * len(endpoints)
    room = HEADROOM * needed
    return [min(1.0, endpoint.context_window / room) for endpoint in endpoints]


def draw_order(weights: Sequence[float], rng: random.Random) -> list[int]:
    """Indices in the order of successive draws without replacement, each draw proportional
    to weight (Efraimidis–Spirakis keys: one `rng.random()` per item, in input order).
    Zero weights come after every positive one, in input order."""
    draw, log, inf = rng.random, math.log, math.inf
    # Every item draws, a zero weight too, so the stream of draws never depends on weights.
    uniforms = [1.0 - draw() for _weight in weights]  # (0, 1]: log() is defined
    keys = [
        -log(uniform) / weight if weight > 0 else inf
        for weight, uniform in zip(weights, uniforms, strict=True)
    ]
    return sorted(range(len(keys)), key=keys.__getitem__)  # stable: ties keep input order


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
    """score = 1/(price+1)² × Π normalised^weight, then a weighted draw.

    Worked a factor at a time over all survivors (a column), not an endpoint at a time, so
    each column's best value, and the Factor of each distinct value, is found once.
    """
    if not survivors:
        return []
    get_stats = live.stats.get
    stats = [get_stats(endpoint.id, NO_STATS) for endpoint in survivors]
    inputs = cast(
        tuple[list[float | None], ...],
        (  # in BALANCED_WEIGHTS order; read only
            [None if s.error_rate is None else 1.0 - s.error_rate for s in stats],
            [s.latency_p50_ms for s in stats],
            [s.latency_p99_ms for s in stats],
            [s.throughput_tps for s in stats],
            token_fits(survivors, request),
        ),
    )
    columns = [
        factor_column(
            name,
            weight,
            values,
            _ratio_to_lowest if name in _LOWER_IS_BETTER else _ratio_to_highest,
            multiplies=True,
        )
        for (name, weight), values in zip(BALANCED_WEIGHTS, inputs, strict=True)
    ]
    multipliers = [inverse_square_price(blended_price(endpoint)) for endpoint in survivors]
    scores = multipliers
    for column in columns:  # multiplied in BALANCED_WEIGHTS order: the same float every time
        scores = [score * f.contribution for score, f in zip(scores, column, strict=True)]
    scored = [
        make_scored(endpoint.id, score, factors, (("inverse_square_price", multiplier),))
        for endpoint, score, factors, multiplier in zip(
            survivors, scores, zip(*columns, strict=True), multipliers, strict=True
        )
    ]
    return [scored[i] for i in draw_order(scores, rng)]


def _normalise(values: Sequence[float | None], higher_is_better: bool) -> list[float]:
    """Ratio to the best known value among the survivors; missing → 1.0 (see module doc)."""
    return _ratio_to_highest(values) if higher_is_better else _ratio_to_lowest(values)


def _ratio_to_highest(values: Sequence[float | None]) -> list[float]:
    """value / best, at least MIN_NORMALISED; with no best above zero, everything is 1.0."""
    known = [v for v in values if v is not None]
    best = max(known) if known else 0.0
    if not best > 0:
        return [1.0] * len(values)
    floor = MIN_NORMALISED
    return [1.0 if v is None else max(floor, v / best) for v in values]


def _ratio_to_lowest(values: Sequence[float | None]) -> list[float]:
    """best / value, at least MIN_NORMALISED; a value of zero or less is 1.0."""
    known = [v for v in values if v is not None]
    if not known:
        return [1.0] * len(values)
    best = min(known)
    floor = MIN_NORMALISED
    return [1.0 if v is None or not v > 0 else max(floor, best / v) for v in values]


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
        make_scored(endpoint.id, norm, _sort_factors(values, primary, norm))
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
