"""Ordering a pinned model's endpoints (SPEC R-DEC-1, R-DEC-6, R-DEC-7, R-DEC-8, D-1): the
balanced draw, the deterministic modes, `provider.order`, soft filters and unhealthy
endpoints at the end."""

import ast
import random
from collections import Counter
from pathlib import Path

import pytest

import routing.engine
from routing.engine.decide import ALGORITHM
from routing.engine.scoring import blended_price, inverse_square_price
from routing.engine.types import Factor, Mode
from tests.routing.builders import ids, make_endpoint, make_live, make_request, route

PURE_MODULES = ("decide", "filters", "policy", "scoring", "fit", "benchmarks", "virtual", "types")
# What the pure modules may import: no django, time, datetime, os, io, sockets or httpx.
PURE_IMPORTS = {"__future__", "collections", "collections.abc", "dataclasses", "enum", "math",
                "random", "statistics", "typing", "routing.engine.benchmarks",
                "routing.engine.filters", "routing.engine.fit", "routing.engine.policy",
                "routing.engine.scoring", "routing.engine.types"}  # fmt: skip


def _priced(endpoint_id: str, price: float, **fields):
    return make_endpoint(
        id=endpoint_id,
        provider=f"prov-{endpoint_id}",
        price_input=price,
        price_output=price,
        **fields,
    )


def test_d_1_blended_price_weighs_input_three_to_one():
    # given $1 in, $5 out per 1M tokens
    endpoint = make_endpoint(price_input=1.0, price_output=5.0)
    # then
    assert blended_price(endpoint) == (3 * 1.0 + 5.0) / 4 == 2.0


def test_d_1_balanced_without_live_data_weighs_by_inverse_square_price_exactly():
    # given no live data and prices 0, 1 and 3 USD/1M
    endpoints = [_priced("free", 0.0), _priced("one", 1.0), _priced("three", 3.0)]
    # when
    decision = route(endpoints)
    # then every balanced factor is neutral and the weight is 1/(price+1)^2
    assert decision.mode is Mode.BALANCED
    assert decision.algorithm == ALGORITHM == "switchyard-route-v1"
    weights = {s.endpoint_id: s.score for s in decision.scored}
    assert weights == {"free": 1.0, "one": 0.25, "three": 0.0625}
    for scored in decision.scored:
        assert scored.multipliers == (("inverse_square_price", weights[scored.endpoint_id]),)
        assert [f.normalized for f in scored.factors] == [1.0] * 5


def test_r_dec_7_cheaper_endpoints_come_first_in_proportion_to_inverse_square_price():
    # given weights 1, 1/4 and 1/16, so the first pick is theirs / 1.3125
    endpoints = [_priced("free", 0.0), _priced("one", 1.0), _priced("three", 3.0)]
    seeds = range(4000)
    # when
    firsts = Counter(ids(route(endpoints, seed=seed))[0] for seed in seeds)
    # then each share is within 0.03 of its expectation (about 4.5 standard errors)
    total = sum(inverse_square_price(p) for p in (0.0, 1.0, 3.0))
    for endpoint_id, price in (("free", 0.0), ("one", 1.0), ("three", 3.0)):
        expected = inverse_square_price(price) / total
        assert abs(firsts[endpoint_id] / len(seeds) - expected) < 0.03, (endpoint_id, firsts)


def test_r_dec_1_a_fixed_seed_gives_the_same_decision_whatever_the_global_random_state():
    # given
    endpoints = [_priced(str(i), float(i)) for i in range(6)]
    # when
    random.seed(1)
    first = route(endpoints, seed=7)
    random.seed(2)
    again = route(endpoints, seed=7)
    # then
    assert first == again


def test_r_dec_1_routing_modules_use_no_clock_io_or_global_randomness():
    for name in PURE_MODULES:
        tree = ast.parse((Path(routing.engine.__file__).parent / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    else [alias.name for alias in node.names]
                )
                assert set(modules) <= PURE_IMPORTS, (name, modules)
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "random":
                assert node.attr == "Random", (name, node.attr)


def test_r_dec_8_missing_live_data_is_neutral_and_measured_data_is_relative():
    # given one fast, one slow and one unmeasured endpoint at the same price
    endpoints = [_priced("fast", 1.0), _priced("slow", 1.0), _priced("unknown", 1.0)]
    live = make_live(
        {
            "fast": {"latency_p50_ms": 100.0, "latency_p99_ms": 200.0},
            "slow": {"latency_p50_ms": 400.0, "latency_p99_ms": 800.0},
        }
    )
    # when
    decision = route(endpoints, live=live)
    # then
    factors = {s.endpoint_id: {f.name: f for f in s.factors} for s in decision.scored}
    assert factors["slow"]["latency_p50"] == Factor("latency_p50", 400.0, 0.25, 0.5, 0.5)
    assert factors["fast"]["latency_p50"] == Factor("latency_p50", 100.0, 1.0, 0.5, 1.0)
    assert factors["unknown"]["latency_p50"] == Factor("latency_p50", None, 1.0, 0.5, 1.0)
    scores = {s.endpoint_id: s.score for s in decision.scored}
    assert scores == {"fast": 0.25, "unknown": 0.25, "slow": 0.0625}


def test_d_1_balanced_weighs_reliability_throughput_and_token_fit():
    # given equal prices; "flaky" fails half its calls, "slow" streams at half the rate and
    # "tight" has a window just 1.5x the request
    endpoints = [
        _priced("good", 1.0, context_window=16_000),
        _priced("flaky", 1.0),
        _priced("slow", 1.0),
        _priced("tight", 1.0, context_window=6000),
    ]
    live = make_live(
        {
            "good": {"error_rate": 0.0, "throughput_tps": 100.0},
            "flaky": {"error_rate": 0.5},
            "slow": {"throughput_tps": 50.0},
        }
    )
    request = make_request(input_tokens=3000, output_tokens=1000)
    # when
    decision = route([*endpoints], request, live=live)
    # then
    scores = {s.endpoint_id: s.score / 0.25 for s in decision.scored}
    assert scores == {"good": 1.0, "flaky": 0.5, "slow": 0.5, "tight": 0.75}


def _live_for_sorts():
    return make_live(
        {
            "a": {"latency_p50_ms": 300.0, "throughput_tps": 40.0},
            "b": {"latency_p50_ms": 100.0, "throughput_tps": 90.0},
            "c": {"latency_p50_ms": 300.0},
            "d": {"latency_p50_ms": 700.0, "throughput_tps": 60.0},
        }
    )


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # price: d and e are cheapest (e: unknown latency 500 ms, d 700 ms), then by latency
        (Mode.PRICE, ["e", "d", "a", "c", "b"]),
        # latency: unknown counts as 500 ms; a and c tie at 300 ms and $1, so by id
        (Mode.LATENCY, ["b", "a", "c", "e", "d"]),
        # throughput: unknown counts as the median of 40, 60, 90 = 60, tying d (cheaper first)
        (Mode.THROUGHPUT, ["b", "e", "d", "c", "a"]),
    ],
)
def test_r_dec_6_price_latency_and_throughput_order_deterministically(mode, expected):
    # given
    endpoints = [
        _priced("a", 1.0),
        _priced("b", 2.0),
        _priced("c", 1.0),
        _priced("d", 0.5),
        _priced("e", 0.5),
    ]
    # when
    decisions = [
        route(
            endpoints,
            make_request(mode=mode, mode_source="suffix"),
            live=_live_for_sorts(),
            seed=seed,
        )
        for seed in range(3)
    ]
    # then
    assert ids(decisions[0]) == expected
    assert decisions[0] == decisions[1] == decisions[2]
    assert (decisions[0].mode, decisions[0].mode_source) == (mode, "suffix")


def test_r_dec_2_provider_order_puts_listed_providers_first_then_the_rest_by_mode():
    # given
    endpoints = [_priced("a", 1.0), _priced("b", 2.0), _priced("c", 3.0), _priced("d", 0.5)]
    request = make_request(mode="price", provider={"order": ["prov-c", "prov-b"]})
    # when
    decision = route(endpoints, request)
    # then
    assert ids(decision) == ["c", "b", "d", "a"]


def test_r_dec_2_provider_order_without_fallbacks_keeps_only_the_listed_providers():
    # given
    endpoints = [_priced("a", 1.0), _priced("b", 2.0), _priced("c", 3.0)]
    request = make_request(provider={"order": ["prov-c", "prov-b"], "allow_fallbacks": False})
    # when
    decision = route(endpoints, request)
    # then
    assert ids(decision) == ["c", "b"]
    assert [r for _id, r in decision.rejected] == ["provider_not_in_order"]


def test_r_dec_7_unhealthy_endpoints_move_to_the_end_keeping_their_order():
    # given the two cheapest endpoints are unhealthy
    endpoints = [_priced(str(i), float(i)) for i in range(5)]
    live = make_live(unhealthy=["0", "1"])
    # when
    decision = route(endpoints, make_request(mode="price"), live=live)
    # then
    assert ids(decision) == ["2", "3", "4", "0", "1"]
    assert [s.demoted for s in decision.scored] == [None, None, None, "unhealthy", "unhealthy"]


def test_r_dec_7_balanced_never_draws_an_unhealthy_endpoint_before_a_healthy_one():
    # given the free endpoint is unhealthy
    endpoints = [_priced("free", 0.0), _priced("one", 1.0), _priced("two", 2.0)]
    live = make_live(unhealthy=["free"])
    # when
    lasts = {ids(route(endpoints, live=live, seed=seed))[-1] for seed in range(200)}
    # then
    assert lasts == {"free"}


@pytest.mark.parametrize(
    ("_case", "prefs", "expected_order", "expected_demoted"),
    [
        (
            "slow throughput",
            {"preferred_min_throughput": 50.0},
            ["b", "d", "c", "a"],
            [None, None, "below_min_throughput", "unhealthy"],
        ),
        (
            "p90 over",
            {"preferred_max_latency": {"p90": 500.0}},
            ["c", "d", "b", "a"],
            [None, None, "above_max_latency_p90", "unhealthy"],
        ),
        (
            "p50 checked before p99",
            {"preferred_max_latency": {"p50": 150.0, "p99": 900.0}},
            ["d", "b", "c", "a"],
            [None, "above_max_latency_p50", "above_max_latency_p99", "unhealthy"],
        ),
    ],
)
def test_r_dec_2_soft_filters_demote_before_unhealthy_and_missing_stats_pass(
    _case, prefs, expected_order, expected_demoted
):
    # given a..d in price order; a is unhealthy; d has no stats
    endpoints = [_priced("a", 0.1), _priced("b", 0.2), _priced("c", 0.3), _priced("d", 0.4)]
    live = make_live(
        {
            "a": {"throughput_tps": 10.0},
            "b": {"throughput_tps": 80.0, "latency_p50_ms": 200.0, "latency_p90_ms": 600.0},
            "c": {"throughput_tps": 20.0, "latency_p50_ms": 120.0, "latency_p99_ms": 1000.0},
        },
        unhealthy=["a"],
    )
    # when
    decision = route(endpoints, make_request(mode="price", provider=prefs), live=live)
    # then
    assert ids(decision) == expected_order
    assert [s.demoted for s in decision.scored] == expected_demoted


def test_r_dec_1_the_decision_records_every_survivors_factors_and_every_rejection():
    # given
    endpoints = [_priced("ok", 1.0), _priced("gone", 1.0, status="disabled")]
    # when
    decision = route(endpoints, make_request(mode="latency"))
    # then
    assert decision.rejected == (("gone", "status_not_serving"),)
    assert decision.scored[0].endpoint_id == "ok"
    assert [f.name for f in decision.scored[0].factors] == ["price", "latency_p50", "throughput"]
    assert decision.reason == (
        "Routed a general task with residency any to meta/llama-3.3-70b in eu-west-1 "
        "(EU-hosted) at prov-ok; 1 endpoint excluded, partner endpoints not allowed."
    )
