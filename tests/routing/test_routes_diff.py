"""Route versions (SPEC R-ROUTE-2, D-25): the canonical JSON and content hash that make a
saved version immutable and an unchanged save a no-op, and `route diff` node by node with
its readable lines. No database."""

import copy
import hashlib

from routing.engine.routes import Change, canonical_json, content_hash, diff_routes, render_diff
from tests.routing.route_builders import config_example_wired


def test_d_25_canonical_json_sorts_keys_and_drops_spaces():
    # when
    data = canonical_json({"start": "a", "nodes": {"a": {"type": "model", "model": "x/ü"}}})
    # then
    assert data == '{"nodes":{"a":{"model":"x/ü","type":"model"}},"start":"a"}'.encode()


def test_d_25_content_hash_ignores_key_order_and_sees_any_value_change():
    # given
    route = config_example_wired()
    reordered = dict(reversed(list(copy.deepcopy(route).items())))
    reordered["nodes"] = dict(reversed(list(reordered["nodes"].items())))
    changed = copy.deepcopy(route)
    changed["nodes"]["split"]["branches"][1]["weight"] = 11
    # when / then
    assert content_hash(reordered) == content_hash(route)
    assert content_hash(changed) != content_hash(route)
    assert content_hash(route) == hashlib.sha256(canonical_json(route)).hexdigest()


def test_equal_routes_have_no_diff():
    # given
    route = config_example_wired()
    # then
    assert diff_routes(route, copy.deepcopy(route)) == ()


def test_d_25_route_diff_lists_node_and_top_level_changes_in_a_fixed_order():
    # given
    old = config_example_wired()
    new = copy.deepcopy(old)
    new["description"] = "a 20% canary"
    new["models"] = ["auto"]
    new["nodes"]["split"]["branches"] = [{"weight": 80, "next": "slow-down"},
                                         {"weight": 20, "next": "canary2"}]  # fmt: skip
    new["nodes"]["canary2"] = {"type": "model", "model": "openai/gpt-4o"}
    del new["nodes"]["canary"]
    del new["nodes"]["small"]["cache_affinity"]
    new["nodes"]["small"]["session_affinity"] = False
    new["nodes"]["refuse"]["status"] = 403
    new["rollout_guard"] = {**old["rollout_guard"], "node": "canary2", "max_p99_ratio": 2}
    # when
    changes = diff_routes(old, new)
    # then
    assert changes == (
        Change("~", "description",
               "pro customers to the big model; a 10% canary for everyone else", "a 20% canary"),
        Change("~", "models", ["auto", "support-*"], ["auto"]),
        Change("-", "nodes.canary", {"type": "model", "model": "mistral/mistral-large"}, None),
        Change("+", "nodes.canary2", None, {"type": "model", "model": "openai/gpt-4o"}),
        Change("~", "nodes.refuse.status", 429, 403),
        Change("-", "nodes.small.cache_affinity", True, None),
        Change("~", "nodes.small.session_affinity", True, False),
        Change("~", "nodes.split.branches",
               [{"weight": 90, "next": "slow-down"}, {"weight": 10, "next": "canary"}],
               [{"weight": 80, "next": "slow-down"}, {"weight": 20, "next": "canary2"}]),
        Change("~", "rollout_guard.max_p99_ratio", 1.5, 2),
        Change("~", "rollout_guard.node", "canary", "canary2"),
    )  # fmt: skip
    assert render_diff(changes) == [
        "~ description: pro customers to the big model; a 10% canary for everyone else"
        " → a 20% canary",
        "~ models: [auto, support-*] → [auto]",
        "- nodes.canary",
        "+ nodes.canary2: {type: model, model: openai/gpt-4o}",
        "~ nodes.refuse.status: 429 → 403",
        "- nodes.small.cache_affinity",
        "~ nodes.small.session_affinity: true → false",
        "~ nodes.split.branches: [{weight: 90, next: slow-down}, {weight: 10, next: canary}]"
        " → [{weight: 80, next: slow-down}, {weight: 20, next: canary2}]",
        "~ rollout_guard.max_p99_ratio: 1.5 → 2",
        "~ rollout_guard.node: canary → canary2",
    ]


def test_route_diff_compares_a_node_field_by_field_type_first():
    # given
    old = {
        "nodes": {
            "gate": {
                "type": "condition",
                "field": "model",
                "op": "exists",
                "then": "a",
                "else": "b",
            }
        }
    }
    new = {"nodes": {"gate": {"type": "rate_limit", "period": "minute", "requests": 5,
                              "within": "a", "exceeded": "b"}}}  # fmt: skip
    # when
    lines = render_diff(diff_routes(old, new))
    # then
    assert lines == [
        "~ nodes.gate.type: condition → rate_limit",
        "- nodes.gate.else",
        "+ nodes.gate.exceeded: b",
        "- nodes.gate.field",
        "- nodes.gate.op",
        "+ nodes.gate.period: minute",
        "+ nodes.gate.requests: 5",
        "- nodes.gate.then",
        "+ nodes.gate.within: a",
    ]


def test_route_diff_of_an_added_and_a_removed_guard_and_start():
    # given
    guard = {"node": "a", "baseline": "b", "min_requests": 10, "max_cost_ratio": 1.3}
    old = {"start": "a", "rollout_guard": guard}
    new = {"start": "b", "models": ["*"]}
    # when
    forward, backward = render_diff(diff_routes(old, new)), render_diff(diff_routes(new, old))
    # then
    assert forward == ["+ models: [*]", "~ start: a → b", "- rollout_guard"]
    assert backward == [
        "- models",
        "~ start: b → a",
        "+ rollout_guard: {node: a, baseline: b, min_requests: 10, max_cost_ratio: 1.3}",
    ]


def test_route_diff_does_not_depend_on_key_order():
    # given
    old = config_example_wired()
    new = copy.deepcopy(old)
    new["nodes"]["big"]["usd"] = 75
    new["nodes"]["plan"]["value"] = "enterprise"
    shuffled = dict(reversed(list(copy.deepcopy(new).items())))
    shuffled["nodes"] = dict(reversed(list(shuffled["nodes"].items())))
    # when / then
    assert diff_routes(old, shuffled) == diff_routes(old, new)
    assert render_diff(diff_routes(old, new)) == [
        "~ nodes.big.usd: 50 → 75",
        "~ nodes.plan.value: pro → enterprise",
    ]


def test_rendered_values_quote_what_would_read_otherwise():
    # given
    old = {"nodes": {"n": {"type": "reject", "status": 429, "message": "Slow down."}}}
    new = {"nodes": {"n": {"type": "reject", "status": 429, "message": "429"}},
           "description": "a: b"}  # fmt: skip
    # when
    lines = render_diff(diff_routes(old, new))
    # then
    assert lines == ['+ description: "a: b"', '~ nodes.n.message: Slow down. → "429"']


def test_a_boolean_is_not_the_number_one_in_a_diff():
    # when
    changes = diff_routes({"nodes": {"m": {"session_affinity": 1}}},
                          {"nodes": {"m": {"session_affinity": True}}})  # fmt: skip
    # then
    assert changes == (Change("~", "nodes.m.session_affinity", 1, True),)
