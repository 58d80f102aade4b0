"""The mixed request sample (bench/sample_requests.py) and what smart routing does with it
(bench/smart_sample.py): the generator, the report's arithmetic, and the tiers of templates
whose verdict the R-TIER-2 table fixes. No database: the demo YAML is parsed, not applied."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from bench.sample_requests import (
    DEFAULT_COUNT,
    TEMPLATES,
    SampleRequest,
    generate,
    template_counts,
)
from bench.smart_sample import (
    EndpointPrice,
    SampleReport,
    build_report,
    load_demo,
    output_tokens,
    render,
)
from routing.engine.tiers.choose import EASY, HARD
from routing.engine.workload import iter_messages, message_text

SEED = 2026
TEMPLATE_NAMES = {template.name for template in TEMPLATES}


@pytest.fixture(scope="module")
def sample() -> list[SampleRequest]:
    return generate(seed=SEED)


@pytest.fixture(scope="module")
def report(sample: list[SampleRequest]) -> SampleReport:
    return build_report(sample, load_demo(), SEED)


def _chars(request: SampleRequest) -> int:
    return sum(len(message_text(m)) for m in iter_messages(request.body))


def _tiers_of(report: SampleReport, template: str) -> set[str]:
    return {row.verdict.tier for row in report.rows if row.template == template}


def test_generator_is_deterministic_per_seed():
    # when
    first, again, other = generate(seed=7), generate(seed=7), generate(seed=8)
    # then
    assert [(r.template, r.body) for r in first] == [(r.template, r.body) for r in again]
    assert [r.body for r in first] != [r.body for r in other]


def test_default_sample_has_at_least_200_requests_from_every_template(sample):
    # then
    assert DEFAULT_COUNT >= 200
    assert len(sample) == DEFAULT_COUNT
    assert {request.template for request in sample} == TEMPLATE_NAMES


def test_template_counts_split_the_count_by_weight_with_one_of_each_at_least():
    # when
    counts = template_counts(201)
    small = template_counts(5)
    # then
    assert sum(counts.values()) == 201
    assert min(counts.values()) >= 1
    assert counts["factual"] > counts["summary_32k"]
    assert sum(small.values()) == 5


def test_bodies_are_chat_completions_requests_without_the_label(sample):
    for request in sample:
        body = request.body
        assert body["model"] == "normal"
        assert "template" not in json.dumps(body)
        assert body["messages"]
        assert {m["role"] for m in body["messages"]} <= {"system", "user", "assistant", "tool"}
        assert body["messages"][-1]["role"] in ("user", "tool")


def test_sample_holds_the_shapes_the_issue_names():
    # given: a sample large enough that every filler is drawn
    sample = generate(count=1_000, seed=SEED)
    users = [message_text(r.body["messages"][-1]) for r in sample]
    tool_counts = {len(r.body["tools"]) for r in sample if "tools" in r.body}
    efforts = {r.body.get("reasoning_effort") for r in sample} - {None}
    thread_lengths = {len(r.body["messages"]) for r in sample if r.template == "thread"}
    formats = {r.body["response_format"]["type"] for r in sample if "response_format" in r.body}
    # then
    assert max(map(_chars, sample)) >= 32_000
    assert any(8_000 <= _chars(r) < 32_000 for r in sample)
    assert any(2_000 <= _chars(r) < 8_000 for r in sample)
    assert tool_counts == {1, 2, 3, 4, 5, 6, 7}
    assert efforts == {"low", "medium", "high"}
    assert min(thread_lengths) >= 2
    assert max(thread_lengths) <= 12
    assert "json_schema" in formats
    assert any(text.count("```") >= 2 for text in users)
    assert any("diff --git " in text for text in users)
    assert any("Traceback (most recent call last)" in text for text in users)
    assert any(
        part.get("type") == "image_url"
        for r in sample
        for m in r.body["messages"]
        if isinstance(m["content"], list)
        for part in m["content"]
    )
    for word in (
        "Übersetze",
        "traduire",
        "Traduci",
        "Traduce",
        "Traduza",
        "Vertaal",
        "Przetłumacz",
    ):
        assert any(word in text for text in users), word
    assert len({json.dumps(r.body) for r in sample}) > 0.9 * len(sample)


def test_report_counts_sum_to_the_sample(report):
    # when
    counts = report.tier_counts()
    # then
    assert counts[EASY] + counts[HARD] == len(report.rows) == DEFAULT_COUNT
    assert counts[EASY] > 0
    assert counts[HARD] > 0


def test_tiered_cost_lies_between_all_easy_and_all_hard(report):
    # when
    tiered, hard, easy = (report.cost_per_1k_usd(t) for t in (None, HARD, EASY))
    # then
    assert hard > tiered > easy > 0
    assert report.saving_pct() == (hard - tiered) / hard * 100
    assert 0 < report.saving_pct() < 100
    hard_rows = [row.cost_usd[HARD] for row in report.rows if row.verdict.tier == HARD]
    hard_share = sum(hard_rows) * 1000 / len(report.rows) / tiered * 100
    assert abs(report.hard_share_pct() - hard_share) < Decimal("1e-9")


@pytest.mark.parametrize(
    ("template", "tier"),
    [
        ("summary_32k", HARD),  # context +6 alone
        ("tools_many", HARD),  # ≥ 5 tools: 4 alone
        ("effort", HARD),  # an effort keyword: 4 alone
        ("thanks", EASY),
        ("summary_8k", EASY),  # ≥ 8k characters alone: 3
        ("traceback", EASY),  # code alone: 3
        ("json_schema", EASY),  # structured output: 2
        ("image", EASY),  # one attachment signal: 2
    ],
)
def test_templates_the_points_table_fixes_land_in_their_tier(report, template, tier):
    assert _tiers_of(report, template) == {tier}


def test_reasoning_effort_medium_or_high_is_hard_at_once(sample, report):
    for request, row in zip(sample, report.rows, strict=True):
        effort = request.body.get("reasoning_effort")
        if effort in ("medium", "high"):
            assert (row.verdict.tier, row.verdict.source) == (HARD, "immediate")
        elif effort == "low":
            assert row.verdict.source == "classifier"


def test_demo_tiers_are_priced_at_their_cheapest_endpoint(report):
    # given
    easy, hard = report.setup.targets[EASY], report.setup.targets[HARD]
    # then
    assert (easy.slug, hard.slug) == ("meta/llama-3.3-70b", "anthropic/claude-sonnet-4")
    assert easy.cost_usd(1_000_000, 1_000_000) == Decimal("0.59") + Decimal("0.79")
    assert hard.cost_usd(1_000_000, 0) == Decimal("3.0")


def test_a_request_costs_its_tokens_at_the_endpoint_price():
    # given
    endpoint = EndpointPrice("ep", "vendor/m", Decimal("2"), Decimal("10"))
    # then
    assert endpoint.cost_usd(500, 100) == Decimal("0.002")


def test_output_tokens_are_the_typical_length_capped_by_the_request():
    # given
    body = {"model": "normal", "messages": [{"role": "user", "content": "thanks!"}]}
    # then
    assert output_tokens(SampleRequest("effort", body)) == 900
    assert output_tokens(SampleRequest("effort", {**body, "max_tokens": 256})) == 256
    assert output_tokens(SampleRequest("thanks", {**body, "max_completion_tokens": 800})) == 30


def test_a_virtual_tier_target_is_priced_at_its_cheapest_concrete_target(tmp_path: Path):
    # given
    config = tmp_path / "switchyard.yaml"
    config.write_text(
        """
providers:
  - {slug: p, base_url: "http://127.0.0.1:9/v1", api_key: k}
models:
  - {slug: v/small}
  - {slug: v/big-a}
  - {slug: v/big-b}
endpoints:
  - {id: small, provider: p, model: v/small, upstream_model: s, region: r,
     price: {input: 0.1, output: 0.2}}
  - {id: big-a, provider: p, model: v/big-a, upstream_model: a, region: r,
     price: {input: 5, output: 20}}
  - {id: big-b, provider: p, model: v/big-b, upstream_model: b, region: r,
     price: {input: 2, output: 8}}
  - {id: big-b-off, provider: p, model: v/big-b, upstream_model: b, region: r,
     price: {input: 0.01, output: 0.01}, status: disabled}
virtual_models:
  - slug: big
    strategy: round_robin
    targets: [{model: v/big-a}, {model: v/big-b}]
workspaces:
  - slug: demo
    smart_routing:
      aliases:
        normal: {easy: v/small, hard: big}
"""
    )
    # when
    setup = load_demo(config)
    # then
    hard = setup.targets[HARD]
    assert (hard.slug, hard.concrete) == ("big", ("v/big-a", "v/big-b"))
    assert [e.endpoint_id for e in hard.endpoints] == ["big-a", "big-b"]
    assert hard.cost_usd(1_000_000, 1_000_000) == Decimal("10")
    assert "virtual; priced at its concrete targets v/big-a, v/big-b" in render(
        build_report(generate(count=20, seed=1), setup, 1)
    )


def test_report_renders_the_counts_and_costs(report):
    # when
    text = render(report)
    counts = report.tier_counts()
    # then
    assert f"| easy | {counts[EASY]} |" in text
    assert f"| hard | {counts[HARD]} |" in text
    assert f"| smart tiers | {report.cost_per_1k_usd(None):.2f} |" in text
    assert f"| everything to hard | {report.cost_per_1k_usd(HARD):.2f} |" in text
    assert f"cost {report.saving_pct():.1f}% less" in text


def test_r_auto_3_the_auto_router_over_the_sample_uses_the_real_decide(sample):
    from bench import auto_sample
    from bench.smart_sample import DEMO_CONFIG, WORKSPACE, _parse, output_tokens

    bodies = [(r.body, output_tokens(r)) for r in sample]
    choices = auto_sample.choose(bodies, _parse(DEMO_CONFIG), WORKSPACE, seed=1)
    assert len(choices) == len(sample)
    assert all(c.model for c in choices)  # the demo workspace leaves every request a model
    # a request with an image can only go to the vision-capable model
    for request, choice in zip(sample, choices, strict=True):
        if request.template == "image":
            assert choice.model == "anthropic/claude-sonnet-4"
    # deterministic: auto scoring draws nothing at random
    assert auto_sample.choose(bodies, _parse(DEMO_CONFIG), WORKSPACE, seed=2) == choices
