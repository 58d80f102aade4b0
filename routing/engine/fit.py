"""Auto scoring (SPEC R-DEC-5, D-2): how well each surviving endpoint fits the request.

score = 5 × task fit + 3 × language fit + 1 × documentation completeness
        + sovereignty bonus (eu-owned 2, eu-hosted 1, any 0)
        + 3 × benchmark fit − 10 × capability gap                      (R-AUTO-3)
        − 2 × price − 2 × latency − 3 × error rate,
price (blended, routing/engine/scoring.py) and p50 latency (unknown 500 ms) min–max normalised over
the survivors (all equal → 0), error rate as recorded (unknown 0). Benchmark fit and the
capability gap come from routing/engine/benchmarks.py; a model without benchmarks is scored at the
mean fit of the survivors that have some (neutral) and has no gap. The workspace objective
re-weights it (D-2): `cost` doubles the price weight, `latency` the latency weight, `quality`
the task, language and benchmark weights. The order is by score, then lower price, lower latency,
endpoint id, so the same request routes the same way twice. Pure and deterministic.

Fit tables (ours; each value in 0..1):
- cheap: ≤ 9B parameters 1.0, ≤ 34B 0.6, ≤ 120B 0.35, larger 0.15, unknown 0.5 — size, not
  today's list price, says what is cheap to run (a 753B model scores 0.15).
- retrieval: min(1, window / 131,072) — the window decides; a `rag` tag adds only 0.1, so a
  rag-tagged model that cannot hold the chunks does not win.
- code: a code-specialised slug 1.0, a `code` task tag 0.7, otherwise 0.3.
- any other task: its tag 1.0, otherwise 0.5; `tool_use` needs the `tools` capability too.
- language: 1.0 when the requested language is a strong language, 0.3 when it is not, 0.5
  when no language is known or the model declares none (R-DEC-8). `multilingual` gets 1.0
  from ≥ 6 strong languages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from routing.engine.benchmarks import benchmark_fit, capability_gap
from routing.engine.scoring import NO_STATS, blended_price, factor_column, latency_ms, make_scored
from routing.engine.types import EndpointInfo, LiveState, RoutingRequest, Scored

# The workspace auto objectives (D-2), in the order `manage.py apply` lists them.
OBJECTIVES = ("balanced", "quality", "cost", "latency")
BASE_WEIGHTS = {
    "task_fit": 5.0,
    "language_fit": 3.0,
    "documentation": 1.0,
    "sovereignty": 2.0,
    "benchmark_fit": 3.0,
    "capability_gap": -10.0,
    "price": -2.0,
    "latency": -2.0,
    "error_rate": -3.0,
}
_DOUBLED = {
    "cost": ("price",),
    "latency": ("latency",),
    "quality": ("task_fit", "language_fit", "benchmark_fit"),
    "balanced": (),
}

CHEAP_FIT_BY_SIZE_B = ((9.0, 1.0), (34.0, 0.6), (120.0, 0.35))  # (at most B params, fit)
CHEAP_FIT_LARGER = 0.15
RETRIEVAL_FULL_WINDOW = 131_072  # tokens: a window this large holds a retrieval prompt
RAG_TAG_BONUS = 0.1
CODE_SLUG_MARKERS = ("code", "coder", "codestral", "devstral")
MULTILINGUAL_MIN_LANGUAGES = 6
SOVEREIGNTY_BONUS = {"eu-owned": 1.0, "eu-hosted": 0.5}  # × the weight 2; any → 0
NEUTRAL = 0.5

Normalise = Callable[[list[float | None]], list[float]]  # a column's values → normalised


def objective_weights(objective: str) -> dict[str, float]:
    """R-DEC-5's weights, re-weighted by the workspace objective (D-2)."""
    if objective not in _DOUBLED:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    doubled = _DOUBLED[objective]
    return {name: w * 2.0 if name in doubled else w for name, w in BASE_WEIGHTS.items()}


def task_fit(endpoint: EndpointInfo, task: str) -> float:
    if task == "cheap":
        return _cheap_fit(endpoint.parameters_b)
    if task == "retrieval":
        bonus = RAG_TAG_BONUS if "rag" in endpoint.task_tags else 0.0
        return min(1.0, endpoint.context_window / RETRIEVAL_FULL_WINDOW + bonus)
    if task == "code":
        return 1.0 if _is_code_slug(endpoint.model) else _code_tag_fit(endpoint.task_tags)
    if task == "tool_use" and "tools" not in endpoint.capabilities:
        return NEUTRAL
    return 1.0 if task in endpoint.task_tags else NEUTRAL


def task_fits(endpoints: Sequence[EndpointInfo], task: str) -> list[float]:
    """`task_fit` of each endpoint. For a code task each model's name is read once, not once
    per endpoint: a model has an endpoint at each of its providers."""
    if task != "code":
        return [task_fit(endpoint, task) for endpoint in endpoints]
    is_code_slug = {model: _is_code_slug(model) for model in {e.model for e in endpoints}}
    return [1.0 if is_code_slug[e.model] else _code_tag_fit(e.task_tags) for e in endpoints]


def _code_tag_fit(task_tags: frozenset[str]) -> float:
    """A code task's fit for a model whose name does not say code."""
    return 0.7 if "code" in task_tags else 0.3


def _is_code_slug(model: str) -> bool:
    """Whether the model's own name (after the vendor) marks it code-specialised."""
    name = model.rsplit("/", 1)[-1].lower()
    for marker in CODE_SLUG_MARKERS:  # noqa: SIM110 - a third of the cost of any() over a generator
        if marker in name:
            return True
    return False


def _cheap_fit(parameters_b: float | None) -> float:
    if parameters_b is None:
        return NEUTRAL
    for limit_b, fit in CHEAP_FIT_BY_SIZE_B:
        if parameters_b <= limit_b:
            return fit
    return CHEAP_FIT_LARGER


def language_fit(endpoint: EndpointInfo, request: RoutingRequest) -> float:
    strong = endpoint.strong_languages
    if request.task == "multilingual" and len(strong) >= MULTILINGUAL_MIN_LANGUAGES:
        return 1.0
    if request.language is None or not strong:
        return NEUTRAL
    return 1.0 if request.language in strong else 0.3


def score_auto(
    survivors: Sequence[EndpointInfo],
    request: RoutingRequest,
    live: LiveState,
    objective: str = "balanced",
) -> list[Scored]:
    """Every survivor scored per R-DEC-5 and ordered best first (before demotions).

    Worked a factor at a time over all survivors (a column, see `factor_column`), not an
    endpoint at a time: the min–max ranges, and the Factor of each distinct value, are found
    once.
    """
    weights = objective_weights(objective)
    get_stats = live.stats.get
    stats = [get_stats(endpoint.id, NO_STATS) for endpoint in survivors]
    prices = [blended_price(endpoint) for endpoint in survivors]
    latencies = [latency_ms(s) for s in stats]
    documentation = [min(1.0, max(0.0, e.documentation_completeness)) for e in survivors]
    bonus = SOVEREIGNTY_BONUS.get
    fits = benchmark_fits(survivors, request.task)
    # Each column is read, never written, below: a list of floats stands for a list of
    # optional floats (lists are invariant, hence the cast).
    inputs = cast(
        tuple[tuple[str, list[float | None], Normalise], ...],
        (
            ("task_fit", task_fits(survivors, request.task), _as_is),
            ("language_fit", [language_fit(e, request) for e in survivors], _as_is),
            ("documentation", documentation, _as_is),
            ("sovereignty", [bonus(e.sovereignty_class, 0.0) for e in survivors], _as_is),
            ("benchmark_fit", fits, _unknown_as_mean),
            ("capability_gap", [capability_gap(f, request.complexity) for f in fits], _as_is),
            ("price", prices, _min_max),
            ("latency", latencies, _min_max),
            ("error_rate", [s.error_rate for s in stats], _unknown_as_zero),
        ),
    )
    columns = [
        factor_column(name, weights[name], values, normalise, multiplies=False)
        for name, values, normalise in inputs
    ]
    contributions = [[factor.contribution for factor in column] for column in columns]
    # Each endpoint's contributions summed in factor order: the same float every time.
    scores: list[float] = list(map(sum, zip(*contributions, strict=True)))
    # Best score first, then lower price, lower latency, endpoint id: a total order.
    keys = [
        (-score, price, latency, endpoint.id)
        for score, price, latency, endpoint in zip(
            scores, prices, latencies, survivors, strict=True
        )
    ]
    rows = list(zip(*columns, strict=True))
    return [
        make_scored(survivors[i].id, scores[i], rows[i])
        for i in sorted(range(len(keys)), key=keys.__getitem__)
    ]


def _as_is(values: list[float | None]) -> list[float]:
    """A fit, documentation or sovereignty value is already in 0..1."""
    return values  # type: ignore[return-value]


def benchmark_fits(endpoints: Sequence[EndpointInfo], task: str) -> list[float | None]:
    """Each endpoint's benchmark fit for the task, worked once per model."""
    by_model = {e.model: e.benchmarks for e in endpoints}
    fit = {model: benchmark_fit(scores, task) for model, scores in by_model.items()}
    return [fit[e.model] for e in endpoints]


def _unknown_as_mean(fits: list[float | None]) -> list[float]:
    """An unknown benchmark fit is the mean of the known ones: neutral (R-AUTO-3)."""
    known = [f for f in fits if f is not None]
    mean = sum(known) / len(known) if known else 0.0
    return [mean if f is None else f for f in fits]


def _unknown_as_zero(error_rates: list[float | None]) -> list[float]:
    """An unknown error rate counts as none (R-DEC-8)."""
    return [0.0 if rate is None else rate for rate in error_rates]


def _min_max(values: Sequence[float]) -> list[float]:
    """0 for the lowest survivor, 1 for the highest; all equal → 0 for everyone."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    span = high - low
    return [(v - low) / span for v in values]
