"""Benchmark fit for the auto router (SPEC R-AUTO-3, PH): how strong a model measurably is
at a workload, from the catalog's benchmark scores, and whether that clears the capability
the request needs.

The catalog keeps a model's scores by benchmark id (`benchmarks: {mmlu_pro: 0.69}`); a
score the provider reported about its own model is stored as `{score: …, source: provider}`
and never read here (`catalog_scores`). Each benchmark measures some workloads
(`WORKLOADS_BY_BENCHMARK`); a model's fit for a workload is the mean of its scores on the
benchmarks that measure it, else the mean of all its scores (general capability is the
next best evidence), else unknown. Unknown is neutral: it neither wins nor loses a ranking
and never widens what the policy allows.

Capability margin: the classifier's complexity c (0..1) asks for a fit of at least
`REQUIRED_FLOOR + REQUIRED_SPAN × c` (0.30 for a greeting, 0.90 for the hardest request)
plus `CAPABILITY_MARGIN`; the shortfall below that is the `capability_gap` factor, which
costs the model in the ranking (routing/engine/fit.py). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Which workloads (routing.engine.types.TASKS) each known benchmark measures. Ids are lowercase
# with underscores, as written in the catalog; an unknown id still counts towards general
# capability.
WORKLOADS_BY_BENCHMARK: dict[str, tuple[str, ...]] = {
    "mmlu_pro": ("general", "reasoning", "multilingual"),
    "mmlu": ("general",),
    "gpqa": ("reasoning",),
    "gpqa_diamond": ("reasoning",),
    "math": ("reasoning",),
    "math_500": ("reasoning",),
    "aime": ("reasoning",),
    "hle": ("reasoning",),
    "arena_hard": ("general",),
    "humaneval": ("code",),
    "mbpp": ("code",),
    "livecodebench": ("code",),
    "swe_bench": ("code",),
    "swe_bench_verified": ("code",),
    "aider_polyglot": ("code",),
    "bfcl": ("tool_use",),
    "tau_bench": ("tool_use",),
    "ifeval": ("structured_output", "general"),
    "jsonschemabench": ("structured_output",),
    "wmt24": ("translation", "multilingual"),
    "flores": ("translation", "multilingual"),
    "mgsm": ("multilingual", "reasoning"),
    "longbench": ("summarisation", "retrieval"),
    "ruler": ("retrieval",),
}
SELF_REPORTED = "provider"  # the `source` of a score the provider published itself

REQUIRED_FLOOR = 0.30  # fit a trivial request needs
REQUIRED_SPAN = 0.60  # added at complexity 1
CAPABILITY_MARGIN = 0.05  # headroom over the requirement before a model counts as capable


def catalog_scores(raw: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """The scores routing may use, from a model's stored `benchmarks`, sorted by id:
    numbers as they are, `{score, source}` unless the provider reported it. Percentages
    (1 < score ≤ 100) become fractions, so every score is in 0..1."""
    scores = []
    for benchmark, value in raw.items():
        if isinstance(value, Mapping):
            if value.get("source") == SELF_REPORTED:
                continue
            value = value.get("score")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        score = value / 100.0 if 1.0 < value <= 100.0 else float(value)
        if 0.0 <= score <= 1.0:
            scores.append((str(benchmark).lower(), score))
    return tuple(sorted(scores))


def relevant(scores: Iterable[tuple[str, float]], task: str) -> tuple[tuple[str, float], ...]:
    """The scores that measure `task`; all of them when none does."""
    scores = tuple(scores)
    measuring = tuple((b, s) for b, s in scores if task in WORKLOADS_BY_BENCHMARK.get(b, ()))
    return measuring or scores


def benchmark_fit(scores: Iterable[tuple[str, float]], task: str) -> float | None:
    """Mean of the relevant scores, or None when the model has none (unknown, neutral)."""
    used = relevant(scores, task)
    return sum(s for _b, s in used) / len(used) if used else None


def required_fit(complexity: float) -> float:
    return REQUIRED_FLOOR + REQUIRED_SPAN * min(1.0, max(0.0, complexity))


def capability_gap(fit: float | None, complexity: float | None) -> float:
    """How far the model falls short of the requirement plus margin; 0 when it clears it,
    when its fit is unknown, or when no complexity was classified."""
    if fit is None or complexity is None:
        return 0.0
    return max(0.0, required_fit(complexity) + CAPABILITY_MARGIN - fit)
