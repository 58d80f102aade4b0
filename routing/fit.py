"""Auto scoring (SPEC R-DEC-5, D-2): how well each surviving endpoint fits the request.

score = 5 × task fit + 3 × language fit + 1 × documentation completeness
        + sovereignty bonus (eu-owned 2, eu-hosted 1, any 0)
        − 2 × price − 2 × latency − 3 × error rate,
price (blended, routing/scoring.py) and p50 latency (unknown 500 ms) min–max normalised over
the survivors (all equal → 0), error rate as recorded (unknown 0). The workspace objective
re-weights it (D-2): `cost` doubles the price weight, `latency` the latency weight, `quality`
the task and language weights. The order is by score, then lower price, lower latency,
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

from collections.abc import Sequence

from routing.scoring import blended_price, latency_ms, stats_of
from routing.types import EndpointInfo, Factor, LiveState, RoutingRequest, Scored

OBJECTIVES = ("balanced", "cost", "latency", "quality")
BASE_WEIGHTS = {
    "task_fit": 5.0,
    "language_fit": 3.0,
    "documentation": 1.0,
    "sovereignty": 2.0,
    "price": -2.0,
    "latency": -2.0,
    "error_rate": -3.0,
}
_DOUBLED = {
    "cost": ("price",),
    "latency": ("latency",),
    "quality": ("task_fit", "language_fit"),
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
        name = endpoint.model.rsplit("/", 1)[-1].lower()
        if any(marker in name for marker in CODE_SLUG_MARKERS):
            return 1.0
        return 0.7 if "code" in endpoint.task_tags else 0.3
    if task == "tool_use" and "tools" not in endpoint.capabilities:
        return NEUTRAL
    return 1.0 if task in endpoint.task_tags else NEUTRAL


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
    """Every survivor scored per R-DEC-5 and ordered best first (before demotions)."""
    weights = objective_weights(objective)
    prices = [blended_price(e) for e in survivors]
    latencies = [latency_ms(stats_of(live, e.id)) for e in survivors]
    price_norm, latency_norm = _min_max(prices), _min_max(latencies)
    made: dict[tuple[str, float | None, float], Factor] = {}
    ranked = []
    for i, endpoint in enumerate(survivors):
        error_rate = stats_of(live, endpoint.id).error_rate
        task, language = task_fit(endpoint, request.task), language_fit(endpoint, request)
        documentation = min(1.0, max(0.0, endpoint.documentation_completeness))
        sovereignty = SOVEREIGNTY_BONUS.get(endpoint.sovereignty_class, 0.0)
        inputs = (
            ("task_fit", task, task),
            ("language_fit", language, language),
            ("documentation", documentation, documentation),
            ("sovereignty", sovereignty, sovereignty),
            ("price", prices[i], price_norm[i]),
            ("latency", latencies[i], latency_norm[i]),
            ("error_rate", error_rate, 0.0 if error_rate is None else error_rate),
        )
        factors = tuple([made.get(key) or _factor(made, key, weights) for key in inputs])
        score = sum([f.contribution for f in factors])
        ranked.append(
            ((-score, prices[i], latencies[i], endpoint.id), Scored(endpoint.id, score, factors))
        )
    ranked.sort(key=lambda pair: pair[0])
    return [scored for _key, scored in ranked]


def _factor(
    made: dict[tuple[str, float | None, float], Factor],
    key: tuple[str, float | None, float],
    weights: dict[str, float],
) -> Factor:
    """Build a factor once per decision: a frozen dataclass costs more than a look-up, and
    most factors repeat across endpoints (fit levels, unknown latency, no errors)."""
    name, value, norm = key
    made[key] = factor = Factor(name, value, norm, weights[name], weights[name] * norm)
    return factor


def _min_max(values: Sequence[float]) -> list[float]:
    """0 for the lowest survivor, 1 for the highest; all equal → 0 for everyone."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    return [(v - low) / (high - low) for v in values]
