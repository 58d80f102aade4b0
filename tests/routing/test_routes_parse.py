"""Validating a route whole (SPEC R-ROUTE-1, D-23, D-26; CONFIG.md "dynamic routes"): the
CONFIG.md example, every kind of problem at its exact path, several problems at once, and
what a valid route is stored as. No database."""

import copy

import pytest

from routing.engine.routes import (
    Branch,
    BudgetNode,
    ConditionNode,
    ModelNode,
    RateLimitNode,
    RejectNode,
    RolloutGuard,
    Route,
    SplitNode,
    parse_route,
)
from routing.engine.types import Mode, ProviderPrefs
from tests.routing.route_builders import (
    CATALOG,
    ROUTE_PATH,
    config_example,
    config_example_wired,
    make_route,
    problems_of,
)

R = ROUTE_PATH
_DELETE = object()


def test_r_route_1_config_example_as_written_reports_its_two_unreachable_nodes():
    """CONFIG.md's example has no exit to `slow-down` (nor so to `refuse`): validation
    forbids unreachable nodes, so it is reported, both nodes by path."""
    # when
    found = problems_of(config_example())
    # then
    assert found == [
        f"{R}.nodes.refuse: unreachable from start 'plan'",
        f"{R}.nodes.slow-down: unreachable from start 'plan'",
    ]


def test_r_route_1_config_example_with_every_node_reachable_parses():
    # when
    route = parse_route(config_example_wired(), path=R, catalog=CATALOG)
    # then
    assert route == Route(
        slug="support-routing",
        start="plan",
        description="pro customers to the big model; a 10% canary for everyone else",
        models=("auto", "support-*"),
        nodes={
            "plan": ConditionNode("plan", "metadata.customer_plan", "equals", "pro", "big",
                                  "split"),
            "split": SplitNode("split", "session", (Branch(90, "slow-down"), Branch(10, "canary"))),
            "big": BudgetNode("big", "daily", 50_000_000, "big-model", "small"),
            "big-model": ModelNode("big-model", "anthropic/claude-sonnet-4", Mode.LATENCY,
                                   fallbacks=("meta/llama-3.3-70b",)),
            "small": ModelNode("small", "meta/llama-3.3-70b", Mode.PRICE,
                               ProviderPrefs(ignore=frozenset({"fake-us"})),
                               session_affinity=True, cache_affinity=True),
            "canary": ModelNode("canary", "mistral/mistral-large"),
            "slow-down": RateLimitNode("slow-down", "minute", 100, "small", "refuse"),
            "refuse": RejectNode("refuse", 429, "Support traffic is over its limit."),
        },
        rollout_guard=RolloutGuard("canary", "small", 200, 0.02, 1.5, 1.3, 300, 30),
    )  # fmt: skip


def test_config_example_problem_path_matches_config_md():
    # given
    raw = config_example_wired()
    raw["nodes"]["split"]["branches"][1]["next"] = "canry"
    # when
    found = problems_of(raw)
    # then: the line CONFIG.md shows, and the canary now reached by nothing
    assert found == [
        f"{R}.nodes.canary: unreachable from start 'plan'",
        f"{R}.nodes.split.branches[1].next: unknown node 'canry'",
        f"{R}.rollout_guard.node: node 'canary' is not reachable from start 'plan'",
    ]


def _base():
    return {
        "slug": "r",
        "start": "plan",
        "nodes": {
            "plan": {"type": "condition", "field": "metadata.plan", "op": "equals",
                     "value": "pro", "then": "big", "else": "small"},
            "big": {"type": "model", "model": "anthropic/claude-sonnet-4"},
            "small": {"type": "model", "model": "meta/llama-3.3-70b"},
        },
    }  # fmt: skip


def _with(changes):
    """The base route with `changes` applied: dotted path → value (_DELETE removes it)."""
    raw = _base()
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = raw
        for key in parents:
            target = target.setdefault(key, {})
        if value is _DELETE:
            del target[last]
        else:
            target[last] = copy.deepcopy(value)
    return raw


def _node(kind, **fields):
    return {"type": kind, **fields}


P = f"{R}.nodes.plan"
TO_BIG = {"then": "big", "else": "small"}
# (case, changes to the base route, every problem reported)
PROBLEMS = [
    ("slug missing", {"slug": _DELETE}, [f"{R}.slug: is required"]),
    ("slug not a slug", {"slug": "a b"},
     [f"{R}.slug: 'a b' is not a slug (letters, digits, '-' and '_')"]),
    ("unknown top-level key", {"nodez": {}}, [f"{R}.nodez: unknown key (did you mean 'nodes'?)"]),
    ("models not strings", {"models": ["auto", 1]},
     [f'{R}.models[1]: must be a non-empty string (quote it: "1")']),
    ("models empty", {"models": []}, [f"{R}.models: must be a non-empty list"]),
    ("description not a string", {"description": 5}, [f"{R}.description: must be a string"]),
    ("start missing", {"start": _DELETE}, [f"{R}.start: is required"]),
    ("start unknown", {"start": "plam"}, [f"{R}.start: unknown node 'plam'"]),
    ("nodes empty", {"nodes": {}},
     [f"{R}.nodes: must be a non-empty mapping of node id to node"]),
    ("node not a mapping", {"nodes.big": "model"}, [f"{R}.nodes.big: must be a mapping"]),
    ("node type missing", {"nodes.big.type": _DELETE}, [f"{R}.nodes.big.type: is required"]),
    ("unknown node type", {"nodes.big.type": "modle"},
     [f"{R}.nodes.big.type: unknown node type 'modle' "
      "(one of condition, split, rate_limit, budget, model, reject)"]),
    ("node id not a slug", {"nodes.big model": _node("model", model="openai/gpt-4o"),
                            "nodes.plan.then": "big model", "nodes.big": _DELETE},
     [f"{R}.nodes.big model: a node id must be a slug (letters, digits, '-', '_')"]),
    ("unknown key in a node", {"nodes.big.modell": "x"},
     [f"{R}.nodes.big.modell: unknown key (did you mean 'model'?)"]),
    ("unknown exit", {"nodes.plan.then": "bigg"},
     [f"{R}.nodes.big: unreachable from start 'plan'", f"{P}.then: unknown node 'bigg'"]),
    ("missing exit", {"nodes.plan.else": _DELETE},
     [f"{P}.else: is required", f"{R}.nodes.small: unreachable from start 'plan'"]),
    ("unreachable node", {"nodes.orphan": _node("model", model="openai/gpt-4o")},
     [f"{R}.nodes.orphan: unreachable from start 'plan'"]),
    ("condition field unknown", {"nodes.plan.field": "user.plan"},
     [f"{P}.field: 'user.plan' is not body.<path>, header.<name>, metadata.<key>, model, "
      "endpoint or session_id"]),
    ("condition body path with an empty segment", {"nodes.plan.field": "body.a..b"},
     [f"{P}.field: 'body.a..b' is not body.<path>, header.<name>, metadata.<key>, model, "
      "endpoint or session_id"]),
    ("condition prefix without a name", {"nodes.plan.field": "header."},
     [f"{P}.field: 'header.' is not body.<path>, header.<name>, metadata.<key>, model, "
      "endpoint or session_id"]),
    ("condition op unknown", {"nodes.plan.op": "near"},
     [f"{P}.op: 'near' is not one of equals, not_equals, in, not_in, exists, glob, "
      "greater_than, less_than"]),
    ("in needs a list", {"nodes.plan.op": "in"},
     [f"{P}.value: must be a non-empty list for op in"]),
    ("not_in needs a non-empty list", {"nodes.plan.op": "not_in", "nodes.plan.value": []},
     [f"{P}.value: must be a non-empty list for op not_in"]),
    ("list items of a string field are strings",
     {"nodes.plan.op": "in", "nodes.plan.value": ["pro", 2]},
     [f'{P}.value[1]: must be a string (quote it: "2")']),
    ("greater_than needs a number",
     {"nodes.plan.field": "body.temperature", "nodes.plan.op": "greater_than"},
     [f"{P}.value: must be a number for op greater_than"]),
    ("less_than on a string field", {"nodes.plan.op": "less_than", "nodes.plan.value": 3},
     [f"{P}.op: less_than compares numbers, and metadata.plan is a string"]),
    ("equals a number on a string field", {"nodes.plan.value": 2},
     [f'{P}.value: must be a string (quote it: "2")']),
    ("equals an object", {"nodes.plan.field": "body.x", "nodes.plan.value": {"a": 1}},
     [f"{P}.value: must be a string, a number or true/false"]),
    ("glob needs a string", {"nodes.plan.field": "body.user", "nodes.plan.op": "glob",
                             "nodes.plan.value": 5},
     [f'{P}.value: must be a string (quote it: "5")']),
    ("equals without a value", {"nodes.plan.value": _DELETE}, [f"{P}.value: is required"]),
    ("exists with a value", {"nodes.plan.op": "exists"}, [f"{P}.value: is not used by op exists"]),
    ("split by unknown", {"nodes.plan": _node("split", by="user", branches=[
        {"weight": 1, "next": "big"}, {"weight": 1, "next": "small"}])},
     [f"{P}.by: 'user' is not one of session, prompt_cache_key, key, random"]),
    ("split weight not above zero", {"nodes.plan": _node("split", by="session", branches=[
        {"weight": 0, "next": "big"}, {"weight": True, "next": "small"}])},
     [f"{P}.branches[0].weight: must be a number > 0",
      f"{P}.branches[1].weight: must be a number > 0"]),
    ("split without branches", {"nodes.plan": _node("split", by="key", branches=[]),
                                "nodes.big": _DELETE, "nodes.small": _DELETE},
     [f"{P}.branches: must be a non-empty list"]),
    ("split branch unknown key", {"nodes.plan": _node("split", by="random", branches=[
        {"weight": 1, "next": "big"}, {"weight": 1, "nxt": "small"}])},
     [f"{P}.branches[1].next: is required",
      f"{P}.branches[1].nxt: unknown key (did you mean 'next'?)",
      f"{R}.nodes.small: unreachable from start 'plan'"]),
    ("rate_limit period and requests", {"nodes.plan": _node(
        "rate_limit", period="second", requests=0, within="big", exceeded="small")},
     [f"{P}.period: 'second' is not one of minute, hour, daily, weekly, monthly",
      f"{P}.requests: must be a whole number ≥ 1"]),
    ("rate_limit requests not whole", {"nodes.plan": _node(
        "rate_limit", period="hour", requests=2.5, within="big", exceeded="small")},
     [f"{P}.requests: must be a whole number ≥ 1"]),
    ("budget period and usd", {"nodes.plan": _node(
        "budget", period="minute", usd=0, within="big", exceeded="small")},
     [f"{P}.period: 'minute' is not one of daily, weekly, monthly",
      f"{P}.usd: must be a number > 0"]),
    ("budget below a micro-dollar", {"nodes.plan": _node(
        "budget", period="daily", usd=0.0000001, within="big", exceeded="small")},
     [f"{P}.usd: must be at least 0.000001"]),
    ("model unknown", {"nodes.big.model": "acme/nope"},
     [f"{R}.nodes.big.model: unknown model 'acme/nope'"]),
    ("model missing", {"nodes.big.model": _DELETE}, [f"{R}.nodes.big.model: is required"]),
    ("more than 8 fallbacks", {"nodes.big.fallbacks": [f"acme/m{i}" for i in range(1, 10)]},
     [f"{R}.nodes.big.fallbacks: at most 8 fallback models, got 9"]),
    ("unknown fallback", {"nodes.big.fallbacks": ["openai/gpt-4o", "acme/nope"]},
     [f"{R}.nodes.big.fallbacks[1]: unknown model 'acme/nope'"]),
    ("auto as a fallback", {"nodes.big.fallbacks": ["auto"]},
     [f"{R}.nodes.big.fallbacks[0]: an auto alias cannot be a fallback model"]),
    ("fallbacks not a list", {"nodes.big.fallbacks": "openai/gpt-4o"},
     [f"{R}.nodes.big.fallbacks: must be a list"]),
    ("mode unknown", {"nodes.big.mode": "fastest"},
     [f"{R}.nodes.big.mode: 'fastest' is not one of balanced, price, latency, throughput"]),
    ("provider not in the catalog", {"nodes.big.provider": {"only": ["groq", "nope"],
                                                            "order": ["Nada"]}},
     [f"{R}.nodes.big.provider.only[1]: unknown provider 'nope'",
      f"{R}.nodes.big.provider.order[0]: unknown provider 'Nada'"]),
    ("provider shape, by the request's parser", {"nodes.big.provider": {"order": "groq"}},
     [f"{R}.nodes.big.provider.order: must be an array of strings"]),
    ("provider unknown key", {"nodes.big.provider": {"onyl": ["groq"]}},
     [f"{R}.nodes.big.provider.onyl: is not a known field"]),
    ("affinity flags are booleans", {"nodes.big.session_affinity": "yes",
                                     "nodes.big.allow_fallbacks": 0},
     [f"{R}.nodes.big.allow_fallbacks: must be true or false",
      f"{R}.nodes.big.session_affinity: must be true or false"]),
    ("reject status and message", {"nodes.big": _node("reject", status=500)},
     [f"{R}.nodes.big.message: is required",
      f"{R}.nodes.big.status: 500 is not one of 402, 429, 403"]),
    ("reject status as a string", {"nodes.big": _node("reject", status="429", message="no")},
     [f"{R}.nodes.big.status: '429' is not one of 402, 429, 403"]),
    ("guard node unknown, baseline missing", {"rollout_guard": {"node": "bigg",
                                                                "min_requests": 10,
                                                                "max_p99_ratio": 2}},
     [f"{R}.rollout_guard.baseline: is required",
      f"{R}.rollout_guard.node: unknown node 'bigg'"]),
    ("guard against itself", {"rollout_guard": {"node": "big", "baseline": "big",
                                                "min_requests": 10, "max_cost_ratio": 2}},
     [f"{R}.rollout_guard.baseline: must differ from node"]),
    ("guard without a bound", {"rollout_guard": {"node": "big", "baseline": "small",
                                                 "min_requests": 10}},
     [f"{R}.rollout_guard: needs at least one of max_error_rate_delta, max_p99_ratio, "
      "max_cost_ratio"]),
    ("guard values", {"rollout_guard": {"node": "big", "baseline": "small", "min_requests": 0,
                                        "max_error_rate_delta": -0.1, "max_p99_ratio": 0,
                                        "window_s": 0, "interval": 30}},
     [f"{R}.rollout_guard.interval: unknown key (did you mean 'interval_s'?)",
      f"{R}.rollout_guard.max_error_rate_delta: must be a number ≥ 0",
      f"{R}.rollout_guard.max_p99_ratio: must be a number > 0",
      f"{R}.rollout_guard.min_requests: must be a whole number ≥ 1",
      f"{R}.rollout_guard.window_s: must be a whole number ≥ 1"]),
    ("guard on an unreachable node", {"nodes.orphan": _node("model", model="openai/gpt-4o"),
                                      "rollout_guard": {"node": "orphan", "baseline": "small",
                                                        "min_requests": 1,
                                                        "max_p99_ratio": 2}},
     [f"{R}.nodes.orphan: unreachable from start 'plan'",
      f"{R}.rollout_guard.node: node 'orphan' is not reachable from start 'plan'"]),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "changes", "expected"), PROBLEMS)
def test_r_route_1_each_problem_is_reported_at_its_path(_case, changes, expected):
    # when
    found = problems_of(_with(changes))
    # then
    assert found == expected


def test_r_route_1_a_cycle_is_reported_at_the_exit_that_closes_it():
    # given: a → b → a, both conditions also leaving to the model
    raw = _with({
        "start": "a", "nodes.plan": _DELETE, "nodes.small": _DELETE,
        "nodes.a": _node("condition", field="model", op="equals", value="x", then="b",
                         **{"else": "big"}),
        "nodes.b": _node("condition", field="endpoint", op="exists", then="a", **{"else": "big"}),
    })  # fmt: skip
    # when
    found = problems_of(raw)
    # then
    assert found == [f"{R}.nodes.b.then: makes a cycle: a → b → a"]


def test_r_route_1_a_self_loop_and_a_cycle_off_the_start_are_both_reported():
    # given
    raw = _with({
        "nodes.plan.else": "plan",
        "nodes.big": _node("rate_limit", period="minute", requests=1, within="small",
                           exceeded="loop"),
        "nodes.loop": _node("split", by="key", branches=[{"weight": 1, "next": "big"}]),
    })  # fmt: skip
    # when
    found = problems_of(raw)
    # then
    assert found == [
        f"{R}.nodes.loop.branches[0].next: makes a cycle: big → loop → big",
        f"{P}.else: makes a cycle: plan → plan",
    ]


def test_r_route_1_several_problems_are_reported_together_in_a_stable_order():
    # given: four unrelated problems in three nodes and the top level
    raw = _with(
        {
            "nodes.plan.op": "near",
            "nodes.big.fallbacks": ["acme/m1", "acme/nope"],
            "nodes.small.provider": {"ignore": ["fake-eu"]},
            "models": "auto",
        }
    )
    reordered = copy.deepcopy(raw)
    reordered["nodes"] = dict(reversed(list(raw["nodes"].items())))
    # when
    found, found_reordered = problems_of(raw), problems_of(dict(reversed(list(reordered.items()))))
    # then
    assert found == [
        f"{R}.models: must be a non-empty list",
        f"{R}.nodes.big.fallbacks[1]: unknown model 'acme/nope'",
        f"{P}.op: 'near' is not one of equals, not_equals, in, not_in, exists, glob, "
        "greater_than, less_than",
        f"{R}.nodes.small.provider.ignore[0]: unknown provider 'fake-eu'",
    ]
    assert found_reordered == found


def test_problems_sort_indexes_as_numbers():
    # given: eleven bad branches
    branches = [{"weight": -1, "next": "big"} for _ in range(11)]
    raw = _with({"nodes.plan": _node("split", by="session", branches=branches),
                 "nodes.small": _DELETE})  # fmt: skip
    # when
    found = problems_of(raw)
    # then
    assert found == [f"{P}.branches[{i}].weight: must be a number > 0" for i in range(11)]


def test_problem_paths_are_relative_without_a_route_path():
    # when
    found = problems_of(_with({"nodes.plan.then": "bigg"}), path="")
    # then
    assert found == ["nodes.big: unreachable from start 'plan'",
                     "nodes.plan.then: unknown node 'bigg'"]  # fmt: skip


def test_d_23_model_names_are_stored_canonical():
    # when
    route = make_route({
        "start": _node("condition", field="header.X-Team", op="in", value=["a", "b"],
                       then="alias", **{"else": "auto"}),
        "alias": _node("model", model="llama-3.3-70b-versatile",
                       fallbacks=["openai/gpt-4o", "gpt-4o", "requested", "team-pool"]),
        "auto": _node("model", model="Switchyard/Auto", fallbacks=[]),
    })  # fmt: skip
    # then
    assert route.nodes == {
        "start": ConditionNode("start", "header.x-team", "in", ("a", "b"), "alias", "auto"),
        "alias": ModelNode("alias", "meta/llama-3.3-70b",
                           fallbacks=("openai/gpt-4o", "requested", "team-pool")),
        "auto": ModelNode("auto", "auto"),
    }  # fmt: skip
    assert route.models == ("*",)


def test_d_23_requested_and_virtual_models_are_kept():
    # when
    route = make_route({
        "start": _node("split", by="random", branches=[{"weight": 1, "next": "keep"},
                                                        {"weight": 2.5, "next": "pool"}]),
        "keep": _node("model", model="requested", allow_fallbacks=False, cache_affinity=False),
        "pool": _node("model", model="team-pool"),
    })  # fmt: skip
    # then
    assert route.nodes["start"] == SplitNode(
        "start", "random", (Branch(1.0, "keep"), Branch(2.5, "pool"))
    )
    assert route.nodes["keep"] == ModelNode(
        "keep", "requested", allow_fallbacks=False, cache_affinity=False
    )
    assert route.nodes["pool"] == ModelNode("pool", "team-pool")


@pytest.mark.parametrize(("usd", "micros"), [(50, 50_000_000), (0.1, 100_000),
                                             (12.345678, 12_345_678), (0.0000015, 2)])  # fmt: skip
def test_budget_usd_is_stored_as_integer_micro_dollars(usd, micros):
    # when
    route = make_route({
        "cap": _node("budget", period="weekly", usd=usd, within="m", exceeded="no"),
        "m": _node("model", model="openai/gpt-4o"),
        "no": _node("reject", status=402, message="Budget spent."),
    })  # fmt: skip
    # then
    assert route.nodes["cap"] == BudgetNode("cap", "weekly", micros, "m", "no")


def test_d_26_rollout_guard_defaults_its_window_and_interval():
    # when
    route = parse_route(_with({"rollout_guard": {"node": "big", "baseline": "small",
                                                 "min_requests": 50,
                                                 "max_error_rate_delta": 0}}),
                        path=R, catalog=CATALOG)  # fmt: skip
    # then
    assert route.rollout_guard == RolloutGuard("big", "small", 50, 0.0, None, None, 300, 30)


def test_a_route_that_is_not_a_mapping_is_one_problem():
    # when
    found = problems_of(["not", "a", "route"])
    # then
    assert found == [f"{R}: must be a mapping"]
