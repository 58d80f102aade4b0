"""Builders of dynamic-route values for tests (no database): the catalog the CONFIG.md
example names, that example as YAML, a route from a `nodes` mapping, request facts with
neutral defaults, and a fixed `Usage`."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from routing.engine.resolve import CatalogNames
from routing.engine.routes import Problem, Route, RouteFacts, RouteInvalid, parse_route

SLUGS = ("anthropic/claude-sonnet-4", "meta/llama-3.3-70b", "mistral/mistral-large",
         "openai/gpt-4o", *(f"acme/m{i}" for i in range(1, 10)))  # fmt: skip
CATALOG = CatalogNames(
    names={slug: slug for slug in SLUGS}
    | {"gpt-4o": "openai/gpt-4o", "llama-3.3-70b-versatile": "meta/llama-3.3-70b"},
    providers=frozenset({"fake-us", "groq", "mistral", "together"}),
    virtual=frozenset({"team-pool"}),
)
ROUTE_PATH = "workspaces[0].routes[0]"

# The route of CONFIG.md "Keys, limits, budgets and dynamic routes", verbatim.
CONFIG_EXAMPLE_YAML = """
routes:
      - slug: support-routing
        description: pro customers to the big model; a 10% canary for everyone else
        models: ["auto", "support-*"]   # requested model names this route handles (default: all)
        start: plan
        nodes:
          plan:      {type: condition, field: metadata.customer_plan, op: equals, value: pro,
                      then: big, else: split}
          split:     {type: split, by: session, branches: [{weight: 90, next: small},
                                                           {weight: 10, next: canary}]}
          big:       {type: budget, period: daily, usd: 50, within: big-model, exceeded: small}
          big-model: {type: model, model: anthropic/claude-sonnet-4, mode: latency,
                      fallbacks: [meta/llama-3.3-70b]}
          small:     {type: model, model: meta/llama-3.3-70b, mode: price,
                      provider: {ignore: [fake-us]}, session_affinity: true, cache_affinity: true}
          canary:    {type: model, model: mistral/mistral-large}
          slow-down: {type: rate_limit, period: minute, requests: 100, within: small,
                      exceeded: refuse}
          refuse:    {type: reject, status: 429, message: "Support traffic is over its limit."}
        rollout_guard:               # SPEC R-BEY-4: watch `canary` against `small`
          {node: canary, baseline: small, min_requests: 200, max_error_rate_delta: 0.02,
           max_p99_ratio: 1.5, max_cost_ratio: 1.3}
"""


def config_example() -> dict[str, Any]:
    """The example as written: `slow-down` and `refuse` are reached by no exit."""
    loaded: dict[str, Any] = yaml.safe_load(CONFIG_EXAMPLE_YAML)["routes"][0]
    return loaded


def config_example_wired() -> dict[str, Any]:
    """The example with its 90 % branch through `slow-down`, so every node is reachable."""
    raw = config_example()
    raw["nodes"]["split"]["branches"][0]["next"] = "slow-down"
    return raw


def make_route(nodes: dict[str, Any], start: str | None = None, **top: Any) -> Route:
    """A parsed route; `start` defaults to the first node."""
    raw = {"slug": "r", "start": start or next(iter(nodes)), "nodes": copy.deepcopy(nodes), **top}
    return parse_route(raw, path="", catalog=CATALOG)


def problems_of(raw: dict[str, Any], path: str = ROUTE_PATH) -> list[str]:
    """Every problem `parse_route` reports, as `path: message` lines."""
    with pytest.raises(RouteInvalid) as invalid:
        parse_route(raw, path=path, catalog=CATALOG)
    problems = invalid.value.problems
    assert all(isinstance(problem, Problem) for problem in problems)
    return [str(problem) for problem in problems]


def make_facts(**fields: Any) -> RouteFacts:
    fields.setdefault("operation", "chat.completions")
    fields.setdefault("requested_model", "auto")
    fields.setdefault("key_id", 7)
    fields.setdefault("seed", 0)
    return RouteFacts(**fields)


@dataclass
class FixedUsage:
    """The key's usage per period, as the gateway's counters would report it."""

    requests_by_period: dict[str, int] = field(default_factory=dict)
    cost_by_period: dict[str, int] = field(default_factory=dict)  # micro-dollars

    def requests(self, period: str) -> int:
        return self.requests_by_period.get(period, 0)

    def cost_micros(self, period: str) -> int:
        return self.cost_by_period.get(period, 0)


NO_USAGE = FixedUsage()
