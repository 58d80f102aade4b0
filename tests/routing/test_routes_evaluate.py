"""Walking a route for one request (SPEC R-ROUTE-1, D-23, D-27): every node type, op and
exit, the steps visited with their sentences, rejects with the period that refused,
split keys and their fallbacks, which route handles a model, period resets, and the route's
provider object only narrowing the request's. No database."""

import hashlib
from dataclasses import replace

import pytest

from routing.engine.policy import NOTHING
from routing.engine.routes import (
    ModelNode,
    RejectNode,
    Route,
    Step,
    evaluate,
    narrow_provider,
    parse_route,
    period_bounds,
    route_for,
    seconds_until_reset,
    split_bucket,
)
from routing.engine.types import Mode, ProviderPrefs
from tests.routing.builders import NOW, make_prefs
from tests.routing.route_builders import (
    CATALOG,
    NO_USAGE,
    FixedUsage,
    config_example_wired,
    make_facts,
    make_route,
)

YES_NO = {"yes": {"type": "model", "model": "openai/gpt-4o"},
          "no": {"type": "model", "model": "meta/llama-3.3-70b"}}  # fmt: skip


def _condition_route(field, op, value=None):
    node = {"type": "condition", "field": field, "op": op, "then": "yes", "else": "no"}
    if op != "exists":
        node["value"] = value
    return make_route({"test": node, **YES_NO})


def _bucket(slug, node, key):
    """The split contract, written out: sha256 of slug, node id and key, NUL-separated;
    the first 8 bytes big-endian, modulo 10,000."""
    digest = hashlib.sha256(f"{slug}\x00{node}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10_000


BODY = {"temperature": 0.7, "stream": True, "user": "team-a/alice", "tier": 2,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user"}],
        "response_format": {"type": "json_object"}, "empty": None}  # fmt: skip
FACTS = make_facts(
    body=BODY,
    headers={"x-team": "support"},
    metadata={"customer_plan": "pro"},
    operation="chat.completions",
    requested_model="support-bot",
    session_id="sess-1",
)
# (case, field, op, value, expected exit, expected why)
CONDITIONS = [
    ("metadata equals", "metadata.customer_plan", "equals", "pro", "then",
     "metadata.customer_plan equals 'pro': true"),
    ("metadata equals, other", "metadata.customer_plan", "equals", "free", "else",
     "metadata.customer_plan equals 'free': false"),
    ("not_equals", "metadata.customer_plan", "not_equals", "free", "then",
     "metadata.customer_plan not_equals 'free': true"),
    ("header in", "header.x-team", "in", ["sales", "support"], "then",
     "header.x-team in ['sales', 'support']: true"),
    ("header name is case-insensitive", "header.X-Team", "equals", "support", "then",
     "header.x-team equals 'support': true"),
    ("not_in", "header.x-team", "not_in", ["support"], "else",
     "header.x-team not_in ['support']: false"),
    ("model glob", "model", "glob", "support-*", "then", "model glob 'support-*': true"),
    ("glob is case-sensitive", "model", "glob", "SUPPORT-*", "else",
     "model glob 'SUPPORT-*': false"),
    ("endpoint", "endpoint", "equals", "chat.completions", "then",
     "endpoint equals 'chat.completions': true"),
    ("session_id exists", "session_id", "exists", None, "then", "session_id exists: true"),
    ("nested body field", "body.response_format.type", "equals", "json_object", "then",
     "body.response_format.type equals 'json_object': true"),
    ("body array index", "body.messages.0.role", "equals", "system", "then",
     "body.messages.0.role equals 'system': true"),
    ("body array index out of range", "body.messages.5.role", "exists", None, "else",
     "body.messages.5.role exists: false"),
    ("greater_than", "body.temperature", "greater_than", 0.5, "then",
     "body.temperature greater_than 0.5: true"),
    ("greater_than is strict", "body.tier", "greater_than", 2, "else",
     "body.tier greater_than 2: false"),
    ("less_than", "body.tier", "less_than", 3, "then", "body.tier less_than 3: true"),
    ("a boolean is not a number", "body.stream", "greater_than", 0, "else",
     "body.stream greater_than 0: false"),
    ("a string is not a number", "body.user", "less_than", 100, "else",
     "body.user less_than 100: false"),
    ("a boolean equals only a boolean", "body.stream", "equals", 1, "else",
     "body.stream equals 1: false"),
    ("boolean equals", "body.stream", "equals", True, "then", "body.stream equals true: true"),
    ("numbers equal across int and float", "body.tier", "in", [2.0, 5], "then",
     "body.tier in [2.0, 5]: true"),
    ("glob on a number is false", "body.tier", "glob", "2*", "else", "body.tier glob '2*': false"),
    ("an object equals no scalar", "body.response_format", "equals", "json_object", "else",
     "body.response_format equals 'json_object': false"),
    ("missing: exists false", "metadata.team", "exists", None, "else",
     "metadata.team exists: false"),
    ("missing: equals false", "metadata.team", "equals", "a", "else",
     "metadata.team equals 'a': false (absent)"),
    ("missing: in false", "body.nope.deeper", "in", ["a"], "else",
     "body.nope.deeper in ['a']: false (absent)"),
    ("missing: glob false", "header.x-other", "glob", "*", "else",
     "header.x-other glob '*': false (absent)"),
    ("missing: greater_than false", "body.nope", "greater_than", 1, "else",
     "body.nope greater_than 1: false (absent)"),
    ("missing: less_than false", "body.nope", "less_than", 1, "else",
     "body.nope less_than 1: false (absent)"),
    ("missing: not_equals true", "metadata.team", "not_equals", "a", "then",
     "metadata.team not_equals 'a': true (absent)"),
    ("missing: not_in true", "metadata.team", "not_in", ["a"], "then",
     "metadata.team not_in ['a']: true (absent)"),
    ("null counts as missing", "body.empty", "exists", None, "else", "body.empty exists: false"),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "field", "op", "value", "exit_", "why"), CONDITIONS)
def test_r_route_1_condition_takes_its_exit(_case, field, op, value, exit_, why):
    # given
    route = _condition_route(field, op, value)
    # when
    outcome = evaluate(route, FACTS, NO_USAGE)
    # then
    target = "yes" if exit_ == "then" else "no"
    assert outcome.visited[0] == Step("test", "condition", exit_, target, why)
    assert outcome.terminal == route.nodes[target]


def test_r_route_1_condition_on_metadata_takes_then_exit_in_the_config_example():
    # given
    route = parse_route(config_example_wired(), path="", catalog=CATALOG)
    facts = make_facts(metadata={"customer_plan": "pro"}, requested_model="auto")
    usage = FixedUsage(cost_by_period={"daily": 12_300_000})
    # when
    outcome = evaluate(route, facts, usage)
    # then
    assert outcome.visited == (
        Step("plan", "condition", "then", "big", "metadata.customer_plan equals 'pro': true"),
        Step("big", "budget", "within", "big-model",
             "budget daily: $12.30 of $50.00 spent: within"),
        Step("big-model", "model", None, None, "model anthropic/claude-sonnet-4"),
    )  # fmt: skip
    assert outcome.terminal == route.nodes["big-model"]
    assert (outcome.model, outcome.reject, outcome.refused_period) == (
        route.nodes["big-model"], None, None,
    )  # fmt: skip


def test_r_route_1_exceeded_budget_takes_its_exceeded_exit_and_no_refused_period():
    # given
    route = parse_route(config_example_wired(), path="", catalog=CATALOG)
    facts = make_facts(metadata={"customer_plan": "pro"})
    # when: exactly the limit spent is exceeded
    outcome = evaluate(route, facts, FixedUsage(cost_by_period={"daily": 50_000_000}))
    # then
    assert [s.node for s in outcome.visited] == ["plan", "big", "small"]
    assert outcome.visited[1].why == "budget daily: $50.00 of $50.00 spent: exceeded"
    assert outcome.visited[1].exit == "exceeded"
    assert outcome.refused_period is None


def _limit_route(requests=100, period="minute"):
    return make_route({
        "limit": {"type": "rate_limit", "period": period, "requests": requests,
                  "within": "ok", "exceeded": "refuse"},
        "ok": {"type": "model", "model": "requested"},
        "refuse": {"type": "reject", "status": 429, "message": "Slow down."},
    })  # fmt: skip


@pytest.mark.parametrize(
    ("used", "exit_", "terminal", "why"),
    [(0, "within", "ok", "rate_limit minute: 0 of 100 requests used: within"),
     (99, "within", "ok", "rate_limit minute: 99 of 100 requests used: within"),
     (100, "exceeded", "refuse", "rate_limit minute: 100 of 100 requests used: exceeded")],
)  # fmt: skip
def test_r_route_1_rate_limit_counts_this_request(used, exit_, terminal, why):
    # given
    route = _limit_route()
    # when
    outcome = evaluate(route, make_facts(), FixedUsage(requests_by_period={"minute": used}))
    # then
    assert outcome.visited[0] == Step("limit", "rate_limit", exit_, terminal, why)
    assert outcome.terminal == route.nodes[terminal]


def test_d_27_reject_after_a_rate_limit_carries_the_refusing_period():
    # given
    route = _limit_route(requests=10, period="hour")
    # when
    outcome = evaluate(route, make_facts(), FixedUsage(requests_by_period={"hour": 10}))
    # then
    assert outcome.reject == RejectNode("refuse", 429, "Slow down.")
    assert outcome.model is None
    assert outcome.refused_period == "hour"
    assert outcome.visited[-1] == Step("refuse", "reject", None, None, "reject 429: Slow down.")


def test_d_27_refused_period_is_the_last_exceeded_node_before_the_reject():
    # given: a daily budget exceeded, then a minute limit exceeded, then a reject
    route = make_route({
        "budget": {"type": "budget", "period": "daily", "usd": 1, "within": "ok",
                   "exceeded": "limit"},
        "limit": {"type": "rate_limit", "period": "minute", "requests": 5, "within": "ok",
                  "exceeded": "no"},
        "ok": {"type": "model", "model": "openai/gpt-4o"},
        "no": {"type": "reject", "status": 402, "message": "Out of budget."},
    })  # fmt: skip
    usage = FixedUsage(requests_by_period={"minute": 9}, cost_by_period={"daily": 1_000_001})
    # when
    outcome = evaluate(route, make_facts(), usage)
    # then
    assert [(s.node, s.exit) for s in outcome.visited] == [
        ("budget", "exceeded"), ("limit", "exceeded"), ("no", None)]  # fmt: skip
    assert outcome.refused_period == "minute"


def test_d_27_a_reject_reached_by_a_condition_has_no_refused_period():
    # given
    route = make_route({
        "who": {"type": "condition", "field": "header.x-team", "op": "exists", "then": "ok",
                "else": "no"},
        "ok": {"type": "model", "model": "openai/gpt-4o"},
        "no": {"type": "reject", "status": 403, "message": "Teams only."},
    })  # fmt: skip
    # when
    outcome = evaluate(route, make_facts(), NO_USAGE)
    # then
    assert (outcome.reject, outcome.refused_period) == (RejectNode("no", 403, "Teams only."), None)


@pytest.mark.parametrize(
    ("spent", "why"),
    [(0, "budget monthly: $0.00 of $0.50 spent: within"),
     (4_123, "budget monthly: $0.004123 of $0.50 spent: within"),
     (499_999, "budget monthly: $0.499999 of $0.50 spent: within"),
     (500_000, "budget monthly: $0.50 of $0.50 spent: exceeded")],
)  # fmt: skip
def test_r_route_1_budget_compares_cost_so_far_with_the_limit(spent, why):
    # given
    route = make_route({
        "cap": {"type": "budget", "period": "monthly", "usd": 0.5, "within": "ok",
                "exceeded": "no"},
        "ok": {"type": "model", "model": "openai/gpt-4o"},
        "no": {"type": "reject", "status": 402, "message": "Spent."},
    })  # fmt: skip
    # when
    outcome = evaluate(route, make_facts(), FixedUsage(cost_by_period={"monthly": spent}))
    # then
    assert outcome.visited[0].why == why


def test_d_23_model_requested_says_which_model_was_kept():
    # when
    outcome = evaluate(_limit_route(), make_facts(requested_model="gpt-4o"), NO_USAGE)
    # then
    assert outcome.visited[-1] == Step("ok", "model", None, None, "model requested: gpt-4o")
    assert outcome.model == ModelNode("ok", "requested")


def _split_route(by="session", weights=(90, 10)):
    names = ["small", "canary", "third"][: len(weights)]
    branches = [{"weight": w, "next": n} for w, n in zip(weights, names, strict=True)]
    nodes = {n: {"type": "model", "model": "openai/gpt-4o"} for n in names}
    return make_route({"split": {"type": "split", "by": by, "branches": branches}, **nodes})


def _key_in(low, high, prefix="s"):
    """The first `prefix<i>` whose bucket in route r, node split is in [low, high)."""
    return next(f"{prefix}{i}" for i in range(100_000)
                if low <= _bucket("r", "split", f"{prefix}{i}") < high)  # fmt: skip


def test_split_bucket_is_sha256_of_route_node_and_key():
    # given
    keys = ("a", "b", "sess-1", "42")
    # then: the contract, and each node splitting on its own
    assert [split_bucket("r", "split", k) for k in keys] == [_bucket("r", "split", k) for k in keys]
    assert [split_bucket("r", "other", k) for k in keys] != [split_bucket("r", "split", k)
                                                             for k in keys]  # fmt: skip


@pytest.mark.parametrize(("low", "high", "index", "target", "weight"),
                         [(0, 9000, 0, "small", 90), (9000, 10_000, 1, "canary", 10)])  # fmt: skip
def test_r_route_1_split_by_session_picks_the_branch_of_its_bucket(
    low, high, index, target, weight
):
    # given
    session = _key_in(low, high)
    bucket = _bucket("r", "split", session)
    # when
    outcome = evaluate(_split_route(), make_facts(session_id=session), NO_USAGE)
    # then
    assert outcome.visited[0] == Step(
        "split", "split", f"branches[{index}]", target,
        f"split by session: bucket {bucket} -> {target} (weight {weight} of 100)",
    )  # fmt: skip


@pytest.mark.parametrize(("bucket", "target"), [(8999, "small"), (9000, "canary")])
def test_split_boundary_bucket_belongs_to_the_next_branch(bucket, target):
    # given: 90/10 gives buckets 0..8999 to the first branch, 9000..9999 to the second
    session = _key_in(bucket, bucket + 1)
    # when
    outcome = evaluate(_split_route(), make_facts(session_id=session), NO_USAGE)
    # then
    assert outcome.visited[0].next == target


# (case, by, facts, the key hashed, the sentence's prefix)
SPLIT_KEYS = [
    ("session", "session", {"session_id": "s-9", "prompt_cache_key": "pk"}, "s-9",
     "split by session: "),
    ("no session: prompt_cache_key", "session", {"prompt_cache_key": "pk-1"}, "pk-1",
     "split by session: no session id, by prompt_cache_key: "),
    ("neither: key id", "session", {"key_id": 42}, "42",
     "split by session: no session id or prompt_cache_key, by key: "),
    ("an empty session id is absent", "session", {"session_id": "", "key_id": 3}, "3",
     "split by session: no session id or prompt_cache_key, by key: "),
    ("prompt_cache_key", "prompt_cache_key", {"session_id": "s", "prompt_cache_key": "pk"},
     "pk", "split by prompt_cache_key: "),
    ("no prompt_cache_key: session", "prompt_cache_key", {"session_id": "s-2"}, "s-2",
     "split by prompt_cache_key: no prompt_cache_key, by session: "),
    ("key", "key", {"session_id": "s", "key_id": 11}, "11", "split by key: "),
    ("random uses the seed", "random", {"session_id": "s", "seed": 987654}, "987654",
     "split by random: "),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "by", "facts", "key", "prefix"), SPLIT_KEYS)
def test_r_route_1_split_key_and_its_documented_fallbacks(_case, by, facts, key, prefix):
    # given
    bucket = _bucket("r", "split", key)
    target = "small" if bucket < 9000 else "canary"
    weight = 90 if target == "small" else 10
    # when
    outcome = evaluate(_split_route(by), make_facts(**facts), NO_USAGE)
    # then
    assert outcome.visited[0].why == (
        f"{prefix}bucket {bucket} -> {target} (weight {weight} of 100)"
    )
    assert outcome.terminal.id == target


def test_split_with_fractional_weights_names_them_compactly():
    # given
    session = _key_in(0, 10_000)
    bucket = _bucket("r", "split", session)
    target, weight = ("small", "0.5") if bucket < 2000 else ("canary", "2")
    # when
    outcome = evaluate(_split_route(weights=(0.5, 2)), make_facts(session_id=session), NO_USAGE)
    # then
    assert outcome.visited[0].why.endswith(f"-> {target} (weight {weight} of 2.5)")


def test_evaluate_refuses_a_hand_built_cycle_instead_of_looping():
    # given: a route built without parse_route, its only condition leading to itself
    valid = _condition_route("model", "exists")
    looping = replace(valid, nodes={**valid.nodes, "test": replace(
        valid.nodes["test"], then="test", else_="test")})  # fmt: skip
    # when / then
    with pytest.raises(ValueError, match="reaches no model or reject node"):
        evaluate(looping, FACTS, NO_USAGE)


def test_evaluate_refuses_an_exit_to_a_missing_node():
    # given
    route = Route(slug="r", start="gone", nodes={"m": ModelNode("m", "openai/gpt-4o")})
    # when / then
    with pytest.raises(ValueError, match="has no node 'gone'"):
        evaluate(route, FACTS, NO_USAGE)


def test_d_23_first_route_whose_models_match_handles_the_request():
    # given
    one = {"m": YES_NO["yes"]}
    support = make_route(one, slug="support", models=["support-*", "auto"])
    catch_all = make_route(one, slug="all")
    gpt = make_route(one, slug="gpt", models=["openai/*"])
    routes = [gpt, support, catch_all]
    # when / then
    assert route_for(routes, "support-bot") is support
    assert route_for(routes, "auto") is support
    assert route_for(routes, "openai/gpt-4o") is gpt
    assert route_for(routes, "meta/llama-3.3-70b") is catch_all
    assert route_for([gpt, support], "Support-bot") is None  # case-sensitive
    assert route_for([], "auto") is None


T = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a Thursday
DAY = 86_400
# (case, period, now, seconds until reset)
RESETS = [
    ("minute on its boundary: a full minute", "minute", T, 60),
    ("minute, mid-way", "minute", T + 30, 30),
    ("minute, half a second left rounds up", "minute", T + 59.5, 1),
    ("hour", "hour", T + 59 * 60, 60),
    ("hour on its boundary", "hour", T + 3600, 3600),
    ("daily: midnight UTC", "daily", T + 23 * 3600, 3600),
    ("daily on its boundary", "daily", T, DAY),
    ("weekly: Thursday to Monday 00:00", "weekly", T, 4 * DAY),
    ("weekly: Sunday's last second", "weekly", T + 4 * DAY - 1, 1),
    ("weekly on Monday 00:00", "weekly", T + 4 * DAY, 7 * DAY),
    ("monthly: January 31 to February 1", "monthly", T + 30 * DAY, DAY),
    ("monthly on the 1st", "monthly", T, 31 * DAY),
    ("monthly: February of a common year", "monthly", T + (31 + 27) * DAY + 43_200, 43_200),
    ("monthly: February of a leap year", "monthly", 1_835_308_800.0, 2 * DAY),  # 2028-02-28
    ("monthly: December to next year", "monthly", T + 364 * DAY + 23 * 3600, 3600),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "period", "now", "seconds"), RESETS)
def test_d_27_seconds_until_reset_at_calendar_boundaries(_case, period, now, seconds):
    assert seconds_until_reset(period, now) == seconds


def test_period_bounds_of_a_week_run_monday_to_monday():
    # when
    start, end = period_bounds("weekly", T + 3600)
    # then: Monday 2025-12-29 00:00 to Monday 2026-01-05 00:00
    assert (start, end) == (T - 3 * DAY, T + 4 * DAY)


def test_an_unknown_period_is_a_bug():
    with pytest.raises(ValueError, match="period must be one of"):
        seconds_until_reset("fortnight", NOW)


# (case, request's provider, route's provider, expected result)
NARROWING = [
    ("only intersects", {"only": ["a", "b"]}, {"only": ["b", "c"]}, {"only": ["b"]}),
    ("disjoint only leaves nothing, never everything", {"only": ["a"]}, {"only": ["c"]},
     {"only": NOTHING}),
    ("only from the route alone", {}, {"only": ["c"]}, {"only": ["c"]}),
    ("only from the request alone", {"only": ["a"]}, {}, {"only": ["a"]}),
    ("ignore is the union", {"ignore": ["a"]}, {"ignore": ["b"]}, {"ignore": ["a", "b"]}),
    ("regions intersect", {"regions": ["eu-west-1", "eu-central-1"]},
     {"regions": ["eu-west-1"]}, {"regions": ["eu-west-1"]}),
    ("disjoint regions leave nothing", {"regions": ["us-east-1"]}, {"regions": ["eu-west-1"]},
     {"regions": NOTHING}),
    ("regions from the route alone", {}, {"regions": ["eu-west-1"]},
     {"regions": ["eu-west-1"]}),
    ("price caps: the lower of each", {"max_price_prompt": 2.0, "max_price_completion": 9.0},
     {"max_price_prompt": 3.0, "max_price_completion": 4.0},
     {"max_price_prompt": 2.0, "max_price_completion": 4.0}),
    ("a cap from one side", {}, {"max_price_prompt": 3.0}, {"max_price_prompt": 3.0}),
    ("order: the request's", {"order": ["a", "b"]}, {"order": ["b"]}, {"order": ["a", "b"]}),
    ("order: else the route's", {}, {"order": ["b", "a"]}, {"order": ["b", "a"]}),
    ("allow_fallbacks only when both allow", {"allow_fallbacks": False, "order": ["a"]}, {},
     {"allow_fallbacks": False, "order": ["a"]}),
    ("the route's no-fallback order holds under the request's order",
     {"order": ["a", "b"]}, {"order": ["b", "c"], "allow_fallbacks": False},
     {"order": ["a", "b"], "allow_fallbacks": False, "only": ["b", "c"]}),
    ("the route's no-fallback order and its only meet", {"order": ["a"]},
     {"order": ["b", "c"], "only": ["c", "d"], "allow_fallbacks": False},
     {"order": ["a"], "allow_fallbacks": False, "only": ["c"]}),
    ("sort: the request's", {"sort": "price"}, {"sort": "latency"}, {"sort": "price"}),
    ("sort: else the route's", {}, {"sort": "latency"}, {"sort": "latency"}),
    ("latency target: the request's, else the route's", {},
     {"preferred_max_latency": {"p50": 900.0}, "preferred_min_throughput": 50.0},
     {"preferred_max_latency": {"p50": 900.0}, "preferred_min_throughput": 50.0}),
    ("restricting extras hold from either side",
     {"extra": {"zdr": False, "data_collection": "allow", "quantizations": ["fp8", "int4"]}},
     {"extra": {"zdr": True, "data_collection": "deny", "quantizations": ["int4", "bf16"],
                "cache_aware_routing": False}},
     {"extra": {"zdr": True, "data_collection": "deny", "quantizations": ["int4"],
                "cache_aware_routing": False}}),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "request_", "route", "expected"), NARROWING)
def test_r_bey_5_route_provider_only_narrows_the_request(_case, request_, route, expected):
    # when
    result = narrow_provider(make_prefs(**request_), make_prefs(**route))
    # then
    assert result == make_prefs(**expected)


def test_narrow_provider_without_a_route_object_keeps_the_request():
    # given
    request = ProviderPrefs(only=frozenset({"a"}), sort=Mode.PRICE)
    # then
    assert narrow_provider(request, None) is request
