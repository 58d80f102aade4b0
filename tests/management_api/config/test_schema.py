"""The pure half of `manage.py apply`: every bad value is reported with its field path,
all at once, and references resolve to the file or to what the database holds. No DB."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from declarative.schema import ConfigError, Existing, parse_config
from management_api.config_apply import vocabulary

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "switchyard.yaml"
EXAMPLE_ENV = {"GROQ_API_KEY": "gsk-managed", "MISTRAL_API_KEY": "mk-managed"} | {
    "ACME_GROQ_KEY": "gsk-acme-byok"
}
PROVIDER = {"slug": "groq", "base_url": "https://api.groq.com/openai/v1"}
MODEL = {"slug": "meta/llama-3.3-70b"}
ENDPOINT = {
    "id": "groq--llama",
    "provider": "groq",
    "model": "meta/llama-3.3-70b",
    "upstream_model": "llama-3.3-70b-versatile",
    "region": "us-east-1",
    "price": {"input": 0.59, "output": 0.79},
}


LLAMA = "meta/llama-3.3-70b"
DAY = datetime.date(2025, 1, 1)  # YAML reads an unquoted date as a date, which JSON cannot store


def errors_of(data: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, vocabulary=vocabulary(), **kwargs)
    return list(caught.value.errors)


def catalog(**sections: Any) -> dict[str, Any]:
    """A valid provider + model + endpoint, with the given sections replaced or added."""
    return {"providers": [PROVIDER], "models": [MODEL], "endpoints": [ENDPOINT]} | sections


def endpoint(**fields: Any) -> dict[str, Any]:
    return catalog(endpoints=[ENDPOINT | fields])


def virtual(**fields: Any) -> dict[str, Any]:
    return catalog(virtual_models=[{"slug": "fast", "targets": [{"model": LLAMA}]} | fields])


def workspace(**fields: Any) -> dict[str, Any]:
    return catalog(workspaces=[{"slug": "acme"} | fields])


def credential(**fields: Any) -> dict[str, Any]:
    return workspace(credentials=[{"provider": "groq", "api_key": "k"} | fields])


def tiers(**fields: Any) -> dict[str, Any]:
    alias = {"easy": LLAMA, "hard": LLAMA} | fields
    return workspace(smart_routing={"aliases": {"normal": alias}})


def test_documented_example_parses() -> None:
    # given
    data = yaml.safe_load(EXAMPLE.read_text())
    # when
    config = parse_config(data, vocabulary=vocabulary(), environ=EXAMPLE_ENV)
    # then
    assert [p.slug for p in config.providers] == ["groq", "mistral"]
    assert config.endpoints[0].price_input == Decimal("0.59")
    assert config.workspaces[0].policy is not None
    assert config.workspaces[0].policy.daily_budget_micros == 50_000_000
    assert config.workspaces[0].credentials[0].api_key.plaintext == "gsk-acme-byok"


def test_documentation_shows_the_tested_example_verbatim() -> None:
    # given
    guide = (EXAMPLE.parents[1] / "configuration.md").read_text()
    # then
    assert f"```yaml\n{EXAMPLE.read_text()}```" in guide


def test_empty_file_is_an_empty_configuration() -> None:
    # when
    config = parse_config(None, vocabulary=vocabulary())
    # then
    assert config.providers == config.workspaces == ()


@pytest.mark.parametrize(
    ("_case", "data", "expected"),
    [
        ("top level not a mapping", ["x"], ["(top level): must be a mapping"]),
        ("unknown section", {"provider": []},
         ["provider: unknown key (did you mean 'providers'?)"]),
        ("section not a list", {"models": {"slug": "a/b"}}, ["models: must be a list"]),
        ("entry not a mapping", {"models": ["a/b"]}, ["models[0]: must be a mapping"]),
        ("unknown nested key", endpoint(prise=1),
         ["endpoints[0].prise: unknown key (did you mean 'price'?)"]),
        ("negative price", endpoint(price={"input": -1, "output": 1}),
         ["endpoints[0].price.input: must be ≥ 0"]),
        ("price finer than the column", endpoint(price={"input": 1e-7, "output": 1}),
         ["endpoints[0].price.input: must have at most 6 decimal places"]),
        ("price missing", catalog(endpoints=[{k: v for k, v in ENDPOINT.items() if k != "price"}]),
         ["endpoints[0].price: is required"]),
        ("bad status", endpoint(status="on"),
         ["endpoints[0].status: must be one of active, degraded, disabled, catalog_only "
          "(got 'on')"]),
        ("bad sovereignty", endpoint(sovereignty_class="eu"),
         ["endpoints[0].sovereignty_class: must be one of eu-owned, eu-hosted, any (got 'eu')"]),
        ("string for a bool", endpoint(partner="yes"),
         ["endpoints[0].partner: must be true or false"]),
        ("zero timeout", endpoint(timeouts={"connect_ms": 0}),
         ["endpoints[0].timeouts.connect_ms: must be ≥ 1"]),
        ("unknown timeout", endpoint(timeouts={"connect_s": 3}),
         ["endpoints[0].timeouts.connect_s: unknown key (did you mean 'connect_ms'?)"]),
        ("unknown provider", endpoint(provider="grok"),
         ["endpoints[0].provider: unknown provider 'grok' (not in this file or the database)"]),
        ("unknown model", endpoint(model="meta/llama-4"),
         ["endpoints[0].model: unknown model 'meta/llama-4' (not in this file or the database)"]),
        ("duplicate endpoint", catalog(endpoints=[ENDPOINT, ENDPOINT]),
         ["endpoints[1].id: duplicate of endpoints[0].id"]),
        ("slug without vendor", {"models": [{"slug": "llama"}]},
         ["models[0].slug: 'llama' is not vendor/name (SPEC D-11)"]),
        ("unknown capability", {"models": [MODEL | {"capabilities": ["text", "smell"]}]},
         ["models[0].capabilities[1]: must be one of text, vision, tools, embedding, speech, "
          "rerank (got 'smell')"]),
        ("unquoted version", {"models": [MODEL | {"version": 3.3}]},
         ['models[0].version: must be a string (quote it: "3.3")']),
        ("completeness above 1", {"models": [MODEL | {"documentation_completeness": 1.5}]},
         ["models[0].documentation_completeness: must be ≤ 1"]),
        ("benchmark not a score", {"models": [MODEL | {"benchmarks": {"mmlu_pro": "high"}}]},
         ["models[0].benchmarks.mmlu_pro: must be a score from 0 to 1 (or a percentage)"]),
        ("benchmark key", {"models": [MODEL | {"benchmarks": {"gpqa": {"score": 1, "by": "x"}}}]},
         ["models[0].benchmarks.gpqa: unknown key 'by' (score, source)"]),
        ("bool for an integer", {"models": [MODEL | {"context_window": True}]},
         ["models[0].context_window: must be an integer"]),
        ("bad api style", {"providers": [PROVIDER | {"api_style": "grpc"}]},
         ["providers[0].api_style: must be one of openai, anthropic (got 'grpc')"]),
        ("bad url", {"providers": [PROVIDER | {"base_url": "api.groq.com"}]},
         ["providers[0].base_url: 'api.groq.com' is not an http(s) URL"]),
        ("unknown target", {"virtual_models": [{"slug": "fast", "targets": [{"model": "x/y"}]}]},
         ["virtual_models[0].targets[0].model: unknown model or virtual model 'x/y' "
          "(not in this file or the database)"]),
        ("zero weight", virtual(targets=[{"model": LLAMA, "weight": 0}]),
         ["virtual_models[0].targets[0].weight: must be > 0"]),
        ("objective without adaptive", virtual(objective="cost"),
         ["virtual_models[0].objective: only applies to strategy adaptive"]),
        ("bad objective", virtual(strategy="adaptive", objective="quality"),
         ["virtual_models[0].objective: must be one of balanced, cost, latency "
          "(got 'quality')"]),
        ("floor above 1", virtual(strategy="adaptive", min_weight_fraction=2),
         ["virtual_models[0].min_weight_fraction: must be ≤ 1"]),
        ("bad strategy", virtual(strategy="best"),
         ["virtual_models[0].strategy: must be one of round_robin, cost, weighted_random, "
          "adaptive (got 'best')"]),
    ],
)  # fmt: skip
def test_bad_catalog_value_is_reported_with_its_path(_case: str, data: Any, expected: list[str]):
    # when
    errors = errors_of(data)
    # then
    assert errors == expected


@pytest.mark.parametrize(
    ("_case", "data", "expected"),
    [
        ("bad residency", workspace(policy={"allowed_residency": ["eu"]}),
         ["workspaces[0].policy.allowed_residency[0]: must be one of eu-owned, eu-hosted, any "
          "(got 'eu')"]),
        ("bad retention", workspace(policy={"retention": "30 days"}),
         ["workspaces[0].policy.retention: '30 days' is not a duration like 30d or 12h"]),
        ("negative budget", workspace(policy={"daily_budget": -1}),
         ["workspaces[0].policy.daily_budget: must be ≥ 0"]),
        ("string price cap", workspace(policy={"max_price": {"prompt": "5"}}),
         ["workspaces[0].policy.max_price.prompt: must be a number"]),
        ("bad routing mode", workspace(policy={"routing_mode": "fast"}),
         ["workspaces[0].policy.routing_mode: must be one of balanced, price, latency, "
          "throughput (got 'fast')"]),
        ("zero attempts", workspace(policy={"max_attempts": 0}),
         ["workspaces[0].policy.max_attempts: must be ≥ 1"]),
        ("cooldown max below base", workspace(policy={"cooldown": {"base_s": 30, "max_s": 10}}),
         ["workspaces[0].policy.cooldown.max_s: must be ≥ base_s"]),
        ("credential without key", workspace(credentials=[{"provider": "groq"}]),
         ["workspaces[0].credentials[0]: needs api_key or api_key_env"]),
        ("credential with both", credential(api_key_env="K"),
         ["workspaces[0].credentials[0].api_key: give api_key or api_key_env, not both"]),
        ("credential for unknown provider", credential(provider="openai"),
         ["workspaces[0].credentials[0].provider: unknown provider 'openai' (not in this file "
          "or the database)"]),
        ("credential for unknown model", credential(models=["meta/x"]),
         ["workspaces[0].credentials[0].models[0]: unknown model 'meta/x' (not in this file or "
          "the database)"]),
        ("duplicate credential", workspace(credentials=[{"provider": "groq", "api_key": "k"}] * 2),
         ["workspaces[0].credentials[1].provider: duplicate of "
          "workspaces[0].credentials[0].provider"]),
        ("tier target unknown", tiers(easy="e"),
         ["workspaces[0].smart_routing.aliases.normal.easy: unknown model or virtual model 'e' "
          "(not in this file or the database)"]),
        ("bad default tier", tiers(default="medium"),
         ["workspaces[0].smart_routing.aliases.normal.default: must be one of easy, hard "
          "(got 'medium')"]),
        ("bad spend profile", workspace(auto_router={"spend_profile": "cheap"}),
         ["workspaces[0].auto_router.spend_profile: must be one of economy, standard, premium, "
          "any or {input, output} caps"]),
        ("spend profile a list", workspace(auto_router={"spend_profile": ["economy"]}),
         ["workspaces[0].auto_router.spend_profile: must be one of economy, standard, premium, "
          "any or {input, output} caps"]),
        ("bad objective", workspace(auto_router={"objective": "speed"}),
         ["workspaces[0].auto_router.objective: must be one of balanced, quality, cost, latency "
          "(got 'speed')"]),
        ("preset param not JSON", workspace(presets=[{"slug": "p", "default_params": {"d": DAY}}]),
         ["workspaces[0].presets[0].default_params.d: must be a JSON value (string, number, "
          "list, ...)"]),
        ("bad workspace slug", catalog(workspaces=[{"slug": "ac me"}]),
         ["workspaces[0].slug: 'ac me' is not a slug"]),
    ],
)  # fmt: skip
def test_bad_workspace_value_is_reported_with_its_path(_case: str, data: Any, expected: list[str]):
    # when
    errors = errors_of(data)
    # then
    assert errors == expected


def test_every_problem_is_reported_not_just_the_first() -> None:
    # given
    data = {
        "providers": [PROVIDER | {"api_style": "grpc"}],
        "models": [MODEL | {"context_window": -1}],
        "endpoints": [ENDPOINT | {"price": {"input": 1, "output": -2}}],
        "workspaces": [{"slug": "acme", "policy": {"retention": "forever"}}],
    }
    # when
    errors = errors_of(data)
    # then
    assert errors == [
        "providers[0].api_style: must be one of openai, anthropic (got 'grpc')",
        "models[0].context_window: must be ≥ 1",
        "endpoints[0].price.output: must be ≥ 0",
        "workspaces[0].policy.retention: 'forever' is not a duration like 30d or 12h",
    ]


def test_virtual_model_cycles_are_rejected_including_through_the_database() -> None:
    # given: `b` already targets `a` in the database
    existing = Existing(virtual_models={"b": ("a",)})
    data = {"virtual_models": [{"slug": "a", "targets": [{"model": "b"}]}]}
    # when
    errors = errors_of(data, existing=existing)
    # then
    assert errors == ["virtual_models[0].targets: cycle a → b → a"]


def test_references_to_rows_already_in_the_database_are_accepted() -> None:
    # given
    existing = Existing(providers=frozenset({"groq"}), models=frozenset({"meta/llama-3.3-70b"}))
    # when
    config = parse_config({"endpoints": [ENDPOINT]}, vocabulary=vocabulary(), existing=existing)
    # then
    assert config.endpoints[0].provider == "groq"


@pytest.mark.parametrize(
    ("_case", "environ", "expected"),
    [
        ("unset", {}, "providers[0].api_key_env: environment variable GROQ_API_KEY is not set"),
        ("empty", {"GROQ_API_KEY": " "}, "providers[0].api_key_env: environment variable "
         "GROQ_API_KEY is empty"),
    ],
)  # fmt: skip
def test_api_key_env_must_name_a_set_variable(_case: str, environ: dict[str, str], expected: str):
    # given
    data = {"providers": [PROVIDER | {"api_key_env": "GROQ_API_KEY"}]}
    # when
    errors = errors_of(data, environ=environ)
    # then
    assert errors == [expected]


def test_a_key_pasted_into_api_key_env_is_not_echoed() -> None:
    # given
    data = {"providers": [PROVIDER | {"api_key_env": "gsk_live_s3cr3t"}]}
    # when
    errors = errors_of(data, environ={})
    # then
    assert errors == [
        "providers[0].api_key_env: must be an UPPER_SNAKE_CASE environment variable name"
    ]


def test_secret_is_read_from_the_environment_and_never_shown_in_repr() -> None:
    # given
    data = {"providers": [PROVIDER | {"api_key_env": "GROQ_API_KEY"}]}
    # when
    config = parse_config(data, vocabulary=vocabulary(), environ={"GROQ_API_KEY": "gsk-s3cr3t\n"})
    # then
    assert config.providers[0].api_key is not None
    assert config.providers[0].api_key.plaintext == "gsk-s3cr3t"
    assert "gsk-s3cr3t" not in repr(config)


@pytest.mark.parametrize(
    ("budget_usd", "expected_micros"),
    [(50.0, 50_000_000), (0, 0), (0.0000005, 1), (12.3456785, 12_345_679), (None, None)],
)
def test_daily_budget_becomes_micro_dollars_rounded_half_up(budget_usd, expected_micros) -> None:
    # when
    config = parse_config(workspace(policy={"daily_budget": budget_usd}), vocabulary=vocabulary())
    # then
    assert config.workspaces[0].policy.daily_budget_micros == expected_micros


def test_absent_workspace_sections_stay_none_and_present_ones_fill_defaults() -> None:
    # when
    config = parse_config(workspace(policy={}), vocabulary=vocabulary())
    # then
    spec = config.workspaces[0]
    assert (spec.smart_routing, spec.auto_router, spec.credentials) == (None, None, ())
    assert spec.policy is not None
    assert (spec.policy.retention, spec.policy.max_attempts, spec.policy.max_price_prompt) == (
        "30d",
        3,
        None,
    )


def test_benchmarks_keep_their_source_so_self_reported_scores_can_be_ignored() -> None:
    raw = {"mmlu_pro": 0.69, "swe_bench": {"score": 41, "source": "provider"}}
    config = parse_config(catalog(models=[MODEL | {"benchmarks": raw}]), vocabulary=vocabulary())
    assert config.models[0].benchmarks == raw


def test_an_adaptive_virtual_model_keeps_its_objective_and_floor() -> None:
    data = virtual(strategy="adaptive", objective="cost", min_weight_fraction=0.1)
    config = parse_config(data, vocabulary=vocabulary())
    assert config.virtual_models[0].adaptive == {"objective": "cost", "min_weight_fraction": 0.1}
