"""Properties of dynamic routes over generated routes, requests and usage (SPEC R-ROUTE-1,
R-BEY-5): a session stays on its split branch, split shares match their weights, every walk
ends at a model or reject node visiting each node once, and a route's provider object never
reopens a provider either side closed."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from routing.engine.filters import provider_ignore, provider_only, provider_order, region
from routing.engine.policy import effective_policy
from routing.engine.routes import (
    ModelNode,
    RejectNode,
    evaluate,
    narrow_provider,
    node_exits,
    parse_route,
)
from tests.routing.builders import make_endpoint, make_policy, make_prefs, make_request
from tests.routing.route_builders import CATALOG, FixedUsage, make_facts, make_route

FAST = settings(max_examples=100, deadline=None)
FEW = settings(max_examples=5, deadline=None)  # each example walks 10,000 sessions

PERIODS = ("minute", "hour", "daily", "weekly", "monthly")
MODELS = ("openai/gpt-4o", "meta/llama-3.3-70b", "requested", "auto")
PROVIDERS = ("fake-us", "groq", "mistral", "together")
REGIONS = ("eu-west-1", "eu-central-1", "us-east-1")

texts = st.text(alphabet="abcxyz-_0123456789", min_size=1, max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
facts_fields = st.fixed_dictionaries({
    "body": st.dictionaries(texts, json_values, max_size=4),
    "headers": st.dictionaries(texts, texts, max_size=3),
    "metadata": st.dictionaries(texts, texts, max_size=3),
    "requested_model": st.sampled_from(("auto", "gpt-4o", "support-bot")),
    "prompt_cache_key": st.none() | texts,
    "key_id": st.integers(1, 10**6),
    "seed": st.integers(0, 2**32),
})  # fmt: skip
usages = st.builds(
    FixedUsage,
    st.dictionaries(st.sampled_from(PERIODS), st.integers(0, 200)),
    st.dictionaries(st.sampled_from(PERIODS), st.integers(0, 100_000_000)),
)

SESSION_SPLIT = {
    "split": {"type": "split", "by": "session",
              "branches": [{"weight": 90, "next": "small"}, {"weight": 10, "next": "canary"}]},
    "small": {"type": "model", "model": "meta/llama-3.3-70b"},
    "canary": {"type": "model", "model": "openai/gpt-4o"},
}  # fmt: skip


@FAST
@given(session=texts, first=facts_fields, second=facts_fields)
def test_r_route_1_a_session_keeps_its_split_branch_whatever_else_changes(session, first, second):
    # given
    route = make_route(SESSION_SPLIT)
    # when
    one = evaluate(route, make_facts(session_id=session, **first), FixedUsage())
    again = evaluate(route, make_facts(session_id=session, **first), FixedUsage())
    other = evaluate(route, make_facts(session_id=session, **second), FixedUsage())
    # then
    assert one == again
    assert other.terminal == one.terminal
    assert other.visited == one.visited


def _shares(weights, slug, prefix):
    names = [f"b{i}" for i in range(len(weights))]
    branches = [{"weight": w, "next": n} for w, n in zip(weights, names, strict=True)]
    route = make_route({
        "split": {"type": "split", "by": "session", "branches": branches},
        **{n: {"type": "model", "model": "openai/gpt-4o"} for n in names},
    }, slug=slug)  # fmt: skip
    counts = Counter(
        evaluate(route, make_facts(session_id=f"{prefix}{i}"), FixedUsage()).terminal.id
        for i in range(10_000)
    )
    return [counts[n] / 10_000 for n in names]


@FEW
@given(slug=texts, prefix=texts)
def test_r_route_1_a_90_10_split_sends_90_and_10_percent_of_sessions(slug, prefix):
    # when
    shares = _shares((90, 10), slug, prefix)
    # then: within 2 percentage points
    assert abs(shares[0] - 0.9) <= 0.02
    assert abs(shares[1] - 0.1) <= 0.02


@FEW
@given(slug=texts, prefix=texts)
def test_r_route_1_a_three_way_split_keeps_each_share(slug, prefix):
    # when
    shares = _shares((50, 30, 20), slug, prefix)
    # then
    wanted = (0.5, 0.3, 0.2)
    assert [abs(got - want) <= 0.02 for got, want in zip(shares, wanted, strict=True)] == [True] * 3


_CONDITIONS = st.sampled_from((
    {"field": "metadata.plan", "op": "equals", "value": "x"},
    {"field": "body.a", "op": "exists"},
    {"field": "body.a.b", "op": "greater_than", "value": 0},
    {"field": "header.abc", "op": "glob", "value": "a*"},
    {"field": "model", "op": "in", "value": ["auto", "gpt-4o"]},
    {"field": "session_id", "op": "not_equals", "value": "abc"},
))  # fmt: skip


@st.composite
def valid_routes(draw):
    """A random DAG: node i's exits point to later nodes only (so no cycle), the last
    node is a terminal, and nodes no exit reaches from n0 are dropped (so all are
    reachable). Every inner type, split key, period and terminal appears."""
    size = draw(st.integers(1, 9))
    nodes = {}
    for i in range(size):
        later = st.sampled_from([f"n{j}" for j in range(i + 1, size)]) if i < size - 1 else None
        inner = ["condition", "split", "rate_limit", "budget"] if later is not None else []
        kinds = ["model", "reject", *inner]
        kind = draw(st.sampled_from(kinds))
        if kind == "model":
            node = {"model": draw(st.sampled_from(MODELS))}
        elif kind == "reject":
            node = {"status": draw(st.sampled_from((402, 429, 403))), "message": "no"}
        elif kind == "condition":
            node = {**draw(_CONDITIONS), "then": draw(later), "else": draw(later)}
        elif kind == "split":
            weights = draw(st.lists(st.integers(1, 100), min_size=1, max_size=3))
            node = {
                "by": draw(st.sampled_from(("session", "prompt_cache_key", "key", "random"))),
                "branches": [{"weight": w, "next": draw(later)} for w in weights],
            }
        elif kind == "rate_limit":
            node = {
                "period": draw(st.sampled_from(PERIODS)),
                "requests": draw(st.integers(1, 100)),
                "within": draw(later),
                "exceeded": draw(later),
            }
        else:
            node = {
                "period": draw(st.sampled_from(PERIODS[2:])),
                "usd": draw(st.integers(1, 50)),
                "within": draw(later),
                "exceeded": draw(later),
            }
        nodes[f"n{i}"] = {"type": kind, **node}
    return {"slug": "gen", "start": "n0", "nodes": _reachable_only(nodes)}  # fmt: skip


def _reachable_only(nodes):
    targets = {"n0"}
    for node_id in nodes:  # in id order, so every parent is seen before its children
        if node_id in targets:
            raw = nodes[node_id]
            targets |= {raw.get(k) for k in ("then", "else", "within", "exceeded")} - {None}
            targets |= {b["next"] for b in raw.get("branches", [])}
    return {k: v for k, v in nodes.items() if k in targets}


@FAST
@given(raw=valid_routes(), fields=facts_fields, session=st.none() | texts, usage=usages)
def test_r_route_1_every_walk_ends_at_a_terminal_visiting_each_node_once(
    raw, fields, session, usage
):
    # given
    route = parse_route(raw, path="", catalog=CATALOG)
    # when
    outcome = evaluate(route, make_facts(session_id=session, **fields), usage)
    # then
    ids = [step.node for step in outcome.visited]
    assert isinstance(outcome.terminal, ModelNode | RejectNode)
    assert ids[0] == route.start
    assert ids[-1] == outcome.terminal.id
    assert len(ids) == len(set(ids)) <= len(route.nodes)
    for step, following in zip(outcome.visited, outcome.visited[1:], strict=False):
        assert (step.exit, step.next) in node_exits(route.nodes[step.node])
        assert step.next == following.node
    assert (outcome.visited[-1].exit, outcome.visited[-1].next) == (None, None)
    if outcome.refused_period is not None:
        assert isinstance(outcome.terminal, RejectNode)


def _subset(values):
    return st.lists(st.sampled_from(values), unique=True, max_size=len(values))


provider_prefs = st.fixed_dictionaries({}, optional={
    "only": _subset(PROVIDERS),
    "ignore": _subset(PROVIDERS),
    "order": _subset(PROVIDERS),
    "allow_fallbacks": st.booleans(),
    "regions": _subset(REGIONS),
    "max_price_prompt": st.floats(0, 10),
}).map(lambda fields: make_prefs(**fields))  # fmt: skip


def _allows(prefs, provider, endpoint_region):
    """Whether the real filter steps let an endpoint of `provider` in `endpoint_region` pass
    a request carrying `prefs`."""
    endpoint = make_endpoint(provider=provider, region=endpoint_region)
    request = make_request(provider=prefs)
    policy, _notes = effective_policy(make_policy(), request)
    checks = (provider_ignore, provider_only, provider_order, region)
    return all(check(endpoint, request, policy) is None for check in checks)


@FAST
@given(request=provider_prefs, route=provider_prefs)
def test_r_bey_5_narrowed_provider_never_allows_what_either_side_excludes(request, route):
    # when
    result = narrow_provider(request, route)
    # then
    for provider in (*PROVIDERS, "other"):
        for endpoint_region in (*REGIONS, "ap-south-1"):
            if _allows(result, provider, endpoint_region):
                assert _allows(request, provider, endpoint_region)
                assert _allows(route, provider, endpoint_region)
    for cap in (request.max_price_prompt, route.max_price_prompt):
        assert cap is None or result.max_price_prompt <= cap
