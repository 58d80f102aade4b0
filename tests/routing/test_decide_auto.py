"""The auto router's fit score (SPEC R-DEC-5, D-2, R-API-5): task, language,
documentation and sovereignty add; price, latency and error rate subtract; the workspace
objective re-weights; the same request routes the same way twice."""

import pytest

from routing.engine.fit import language_fit, task_fit
from routing.engine.types import Factor
from tests.routing.builders import ids, make_endpoint, make_live, make_policy, make_request, route


def _model(slug: str, **fields):
    """An endpoint of model `slug`, its id the name part, its provider prov-<name>."""
    name = slug.split("/")[-1]
    return make_endpoint(id=name, model=slug, provider=f"prov-{name}", **fields)


def _auto(task: str = "general", **fields):
    return make_request(auto=True, task=task, **fields)


def _factors(decision, endpoint_id: str) -> dict[str, Factor]:
    scored = next(s for s in decision.scored if s.endpoint_id == endpoint_id)
    return {f.name: f for f in scored.factors}


@pytest.mark.parametrize(
    ("parameters_b", "expected"),
    [(8.0, 1.0), (9.0, 1.0), (32.0, 0.6), (70.0, 0.35), (120.0, 0.35), (753.0, 0.15), (None, 0.5)],
)
def test_r_dec_5_cheap_task_fit_falls_with_parameters(parameters_b, expected):
    assert task_fit(make_endpoint(parameters_b=parameters_b), "cheap") == expected


def test_r_dec_5_a_753b_model_scores_0_15_task_fit_and_loses_a_cheap_task():
    # given
    huge = _model("deepseek/huge-753b", parameters_b=753.0)
    small = _model("mistral/small-8b", parameters_b=8.0)
    # when
    decision = route([huge, small], _auto("cheap"))
    # then
    assert _factors(decision, "huge-753b")["task_fit"] == Factor("task_fit", 0.15, 0.15, 5.0, 0.75)
    assert ids(decision) == ["small-8b", "huge-753b"]


def test_r_dec_5_retrieval_is_decided_by_the_window_not_the_rag_tag():
    # given a rag-tagged model with a small window and an untagged one with a large window
    tagged = _model("acme/rag-small", task_tags=["rag"], context_window=8192)
    wide = _model("acme/wide", context_window=131_072)
    # when
    decision = route([tagged, wide], _auto("retrieval"))
    # then
    assert ids(decision) == ["wide", "rag-small"]
    assert _factors(decision, "rag-small")["task_fit"].value == 8192 / 131_072 + 0.1
    assert _factors(decision, "wide")["task_fit"].value == 1.0


@pytest.mark.parametrize(
    ("slug", "tags", "expected"),
    [
        ("mistral/codestral-2501", [], 1.0),
        ("qwen/qwen2.5-coder-32b", [], 1.0),
        ("mistral/devstral-small", [], 1.0),
        ("meta/llama-3.3-70b", ["code"], 0.7),
        ("meta/llama-3.3-70b", [], 0.3),
        ("codeium/chat", [], 0.3),
    ],
)
def test_r_dec_5_code_prefers_code_specialised_slugs(slug, tags, expected):
    assert task_fit(_model(slug, task_tags=tags), "code") == expected


def test_r_dec_5_a_code_request_routes_to_the_code_model():
    # given
    endpoints = [
        _model("meta/llama-3.3-70b", task_tags=["code"]),
        _model("mistral/codestral-2501", sovereignty_class="eu-owned"),
    ]
    # when
    decision = route(
        endpoints, _auto("code"), make_policy(allowed_residency=["eu-owned", "eu-hosted"])
    )
    # then
    assert ids(decision) == ["codestral-2501", "llama-3.3-70b"]
    assert decision.reason == (
        "Auto-routed a code task with residency eu-hosted to mistral/codestral-2501 in "
        "eu-west-1 (EU-owned) at prov-codestral-2501; 0 endpoints excluded, "
        "partner endpoints not allowed."
    )


def test_r_dec_5_a_german_request_gains_for_a_model_strong_in_german():
    # given
    german = _model("acme/german", strong_languages=["de", "en"])
    english = _model("acme/english", strong_languages=["en", "fr"])
    undeclared = _model("acme/undeclared")
    request = _auto(language="de")
    # when
    decision = route([english, undeclared, german], request)
    # then
    assert [language_fit(e, request) for e in (german, english, undeclared)] == [1.0, 0.3, 0.5]
    assert ids(decision) == ["german", "undeclared", "english"]


def test_r_dec_5_no_known_language_is_neutral_for_every_model():
    # given
    request = _auto(language=None)
    # then
    assert language_fit(_model("acme/german", strong_languages=["de"]), request) == 0.5


def test_r_dec_5_a_multilingual_request_gains_from_six_strong_languages():
    # given
    six = _model("acme/six", strong_languages=["de", "en", "es", "fr", "it", "pt"])
    five = _model("acme/five", strong_languages=["de", "en", "es", "fr", "it"])
    # when
    decision = route([five, six], _auto("multilingual"))
    # then
    assert _factors(decision, "six")["language_fit"].value == 1.0
    assert _factors(decision, "five")["language_fit"].value == 0.5
    assert ids(decision) == ["six", "five"]


def test_r_dec_5_tool_use_fits_fully_only_with_the_tools_capability():
    # given
    tagged = _model("acme/a", task_tags=["tool_use"], capabilities=["text", "tools"])
    no_tools = _model("acme/b", task_tags=["tool_use"], capabilities=["text"])
    # then
    assert (task_fit(tagged, "tool_use"), task_fit(no_tools, "tool_use")) == (1.0, 0.5)


def test_r_dec_5_every_factor_of_the_score():
    # given two models; "b" is pricier, slower and fails 10% of calls
    a = _model(
        "acme/a",
        price_input=1.0,
        price_output=1.0,
        sovereignty_class="eu-owned",
        documentation_completeness=0.8,
    )
    b = _model("acme/b", price_input=3.0, price_output=3.0, sovereignty_class="any")
    live = make_live({"a": {"latency_p50_ms": 200.0}, "b": {"error_rate": 0.1}})
    # when
    decision = route([a, b], _auto("summarisation"), live=live)
    # then price and latency are min-max over the survivors; unknown latency is 500 ms
    assert decision.scored[1].factors == (
        Factor("task_fit", 0.5, 0.5, 5.0, 2.5),
        Factor("language_fit", 0.5, 0.5, 3.0, 1.5),
        Factor("documentation", 0.0, 0.0, 1.0, 0.0),
        Factor("sovereignty", 0.0, 0.0, 2.0, 0.0),
        Factor("benchmark_fit", None, 0.0, 3.0, 0.0),  # no benchmarks anywhere: neutral
        Factor("capability_gap", 0.0, 0.0, -10.0, -0.0),
        Factor("price", 3.0, 1.0, -2.0, -2.0),
        Factor("latency", 500.0, 1.0, -2.0, -2.0),
        Factor("error_rate", 0.1, 0.1, -3.0, -0.30000000000000004),
    )
    assert decision.scored[0].factors[2:4] == (
        Factor("documentation", 0.8, 0.8, 1.0, 0.8),
        Factor("sovereignty", 1.0, 1.0, 2.0, 2.0),
    )
    assert decision.scored[0].factors[6] == Factor("price", 1.0, 0.0, -2.0, -0.0)
    assert [s.score for s in decision.scored] == [pytest.approx(6.8), pytest.approx(-0.3)]


@pytest.mark.parametrize(
    ("_case", "first", "second", "stats", "expected"),
    [
        # a dear model buys its price penalty (-2) back with documentation (+1) and EU-owned
        # (+1 over EU-hosted): equal scores, the lower price goes first
        (
            "lower price",
            {
                "price_input": 2.0,
                "documentation_completeness": 1.0,
                "sovereignty_class": "eu-owned",
            },
            {"price_input": 0.0},
            {},
            ["z", "a"],
        ),
        (
            "lower latency",
            {"documentation_completeness": 1.0, "sovereignty_class": "eu-owned"},
            {},
            {"a": {"latency_p50_ms": 900.0}, "z": {"latency_p50_ms": 100.0}},
            ["z", "a"],
        ),
        ("stable id", {}, {}, {"z": {"latency_p50_ms": 500.0}}, ["a", "z"]),
    ],
)
def test_r_dec_5_ties_go_to_lower_price_then_lower_latency_then_id(
    _case, first, second, stats, expected
):
    # given two models with exactly equal scores
    endpoints = [_model("acme/a", **first), _model("acme/z", **second)]
    # when
    decision = route(endpoints, _auto(), live=make_live(stats))
    # then
    assert decision.scored[0].score == decision.scored[1].score
    assert ids(decision) == expected


def test_r_dec_5_same_request_twice_routes_the_same_way():
    # given
    endpoints = [
        _model(f"acme/m{i}", price_input=float(i % 3), parameters_b=float(i * 10)) for i in range(8)
    ]
    request = _auto("cheap", language="de")
    # when
    first, again = route(endpoints, request, seed=1), route(endpoints, request, seed=99)
    # then
    assert first == again


@pytest.mark.parametrize(
    ("objective", "winner", "doubled"),
    [
        ("balanced", "cheap", {}),
        ("quality", "coder", {"task_fit": 10.0, "language_fit": 6.0, "benchmark_fit": 6.0}),
    ],
)
def test_d_2_quality_doubles_task_language_and_benchmark_weights(objective, winner, doubled):
    # given a code-specialised model at the highest price and a code-tagged cheap one
    coder = _model("acme/coder", price_input=4.0, price_output=4.0)
    cheap = _model("acme/cheap", task_tags=["code"], price_input=0.0, price_output=0.0)
    # when
    decision = route([coder, cheap], _auto("code"), objective=objective)
    # then
    assert ids(decision)[0] == winner
    weights = {f.name: f.weight for f in decision.scored[0].factors}
    assert weights == {
        "task_fit": 5.0,
        "language_fit": 3.0,
        "documentation": 1.0,
        "sovereignty": 2.0,
        "benchmark_fit": 3.0,
        "capability_gap": -10.0,
        "price": -2.0,
        "latency": -2.0,
        "error_rate": -3.0,
        **doubled,
    }


@pytest.mark.parametrize(
    ("objective", "winner"), [("balanced", "coder"), ("cost", "plain"), ("latency", "plain")]
)
def test_d_2_cost_and_latency_double_their_weights(objective, winner):
    # given the code model sits at 0.75 of the survivors' price and latency ranges: its
    # task fit (+3.5 over plain) outweighs -1.5 - 1.5, but not a doubled -3.0 on either side
    coder = _model("acme/coder", price_input=3.0, price_output=3.0)
    plain = _model("acme/plain", price_input=0.0, price_output=0.0)
    pricey = _model("acme/pricey", price_input=4.0, price_output=4.0)
    live = make_live(
        {
            "coder": {"latency_p50_ms": 700.0},
            "plain": {"latency_p50_ms": 100.0},
            "pricey": {"latency_p50_ms": 900.0},
        }
    )
    # when
    decision = route([coder, plain, pricey], _auto("code"), live=live, objective=objective)
    # then
    assert ids(decision) == [winner, *({"coder", "plain"} - {winner}), "pricey"]


def test_d_2_an_unknown_objective_is_refused():
    with pytest.raises(ValueError, match="unknown objective 'speed'"):
        route([_model("acme/a")], _auto(), objective="speed")


def test_r_dec_7_auto_moves_unhealthy_endpoints_to_the_end():
    # given the best fit is unhealthy
    coder = _model("acme/coder")
    plain = _model("acme/plain")
    # when
    decision = route([coder, plain], _auto("code"), live=make_live(unhealthy=["coder"]))
    # then
    assert ids(decision) == ["plain", "coder"]
    assert decision.scored[1].demoted == "unhealthy"
