"""Benchmark fit and capability margin in the auto router's ranking (SPEC R-AUTO-3)."""

from __future__ import annotations

import pytest

from routing.engine.benchmarks import benchmark_fit, capability_gap, catalog_scores, required_fit
from tests.routing.builders import ids, make_endpoint, make_request, route


def _model(name: str, price: float, **benchmarks):
    return make_endpoint(
        id=name,
        model=f"acme/{name}",
        provider=f"prov-{name}",
        price_input=price,
        price_output=price,
        benchmarks=catalog_scores(benchmarks),
    )


def _auto(task: str, complexity: float | None = None):
    return make_request(auto=True, task=task, complexity=complexity)


def test_r_auto_3_provider_reported_scores_are_ignored_and_percentages_normalised():
    raw = {"mmlu_pro": 69, "swe_bench": {"score": 0.9, "source": "provider"},
           "gpqa": {"score": 0.5, "source": "artificialanalysis"}, "bogus": "high"}  # fmt: skip
    assert catalog_scores(raw) == (("gpqa", 0.5), ("mmlu_pro", 0.69))


def test_r_auto_3_fit_reads_the_benchmarks_that_measure_the_workload():
    scores = catalog_scores({"humaneval": 0.9, "swe_bench": 0.5, "mmlu_pro": 0.2})
    assert benchmark_fit(scores, "code") == pytest.approx(0.7)
    assert benchmark_fit(scores, "reasoning") == pytest.approx(0.2)  # mmlu_pro measures it
    # no benchmark measures translation: general capability, the mean of all, stands in
    assert benchmark_fit(scores, "translation") == pytest.approx(1.6 / 3)
    assert benchmark_fit((), "code") is None


def test_r_auto_3_capability_margin_over_the_required_complexity():
    assert required_fit(0.0) == pytest.approx(0.30)
    assert required_fit(1.0) == pytest.approx(0.90)
    assert capability_gap(0.5, 1.0) == pytest.approx(0.45)  # 0.90 + 0.05 margin − 0.5
    assert capability_gap(0.97, 1.0) == 0.0
    assert capability_gap(None, 1.0) == 0.0  # unknown is neutral
    assert capability_gap(0.1, None) == 0.0  # nothing classified


def test_r_auto_3_the_stronger_coder_wins_a_code_request_at_equal_price():
    weak = _model("weak", 1.0, humaneval=0.4)
    strong = _model("strong", 1.0, humaneval=0.9)
    decision = route([weak, strong], _auto("code", complexity=0.3))
    assert ids(decision) == ["strong", "weak"]
    factors = {f.name: f for f in decision.scored[0].factors}
    assert factors["benchmark_fit"].value == pytest.approx(0.9)


def test_r_auto_3_a_hard_request_pays_for_capability_an_easy_one_does_not():
    cheap = _model("cheap", 0.1, mmlu_pro=0.45)
    frontier = _model("frontier", 5.0, mmlu_pro=0.85)
    easy = route([cheap, frontier], _auto("general", complexity=0.1))
    hard = route([cheap, frontier], _auto("general", complexity=0.9))
    assert ids(easy)[0] == "cheap"
    assert ids(hard)[0] == "frontier"
    gap = {f.name: f for f in hard.scored[1].factors}["capability_gap"]
    assert gap.value == pytest.approx(0.9 * 0.6 + 0.3 + 0.05 - 0.45)


def test_r_auto_3_a_model_without_benchmarks_is_neutral_not_excluded():
    known = _model("known", 1.0, mmlu_pro=0.8)
    unknown = _model("unknown", 1.0)
    decision = route([known, unknown], _auto("general", complexity=1.0))
    assert sorted(ids(decision)) == ["known", "unknown"]
    factors = {s.endpoint_id: {f.name: f for f in s.factors} for s in decision.scored}
    # scored at the mean of the known fits, with no capability gap
    assert factors["unknown"]["benchmark_fit"].normalized == pytest.approx(0.8)
    assert factors["unknown"]["capability_gap"].value == 0.0
