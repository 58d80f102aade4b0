"""Replay reads what the live walk read (SPEC R-BEY-3): for generated requests — session
ids in a header or the body, prompt-cache keys, key ids, metadata, `x-` headers, the seed of
`split by: random` — the facts a replay rebuilds from the trace's decision inputs walk every
route to the same node, by the same branch, as the live request's facts did."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
from django.http.request import HttpHeaders
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.request_path.resolve.routes import route_facts, route_inputs
from presets.replay import replay_facts
from routing.engine.routes import evaluate
from tests.routing.route_builders import FixedUsage, make_route

ids = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
              min_size=1, max_size=300)  # fmt: skip
ascii_ids = st.text(alphabet="abcXYZ -_.:0123456789", min_size=1, max_size=40)
LONG_PLAN = "enterprise-" + "x" * 400  # OpenAI allows 512 characters a metadata value
plans = st.sampled_from(["pro", "free", LONG_PLAN, LONG_PLAN[:-1]])
requests = st.fixed_dictionaries(
    {},
    optional={
        "header_session": ascii_ids,
        "body_session": ids,
        "prompt_cache_key": ids,
        "plan": plans,
        "team": ascii_ids,
        "seed": st.integers(0, 2**63 - 1),
        "sdk_headers": st.integers(0, 20),
        "extra_metadata": st.integers(0, 15),
    },
)


def _route(by: str):
    return make_route({
        "plan": {"type": "condition", "field": "metadata.customer_plan", "op": "equals",
                 "value": "pro", "then": "team", "else": "long"},
        "long": {"type": "condition", "field": "metadata.customer_plan", "op": "equals",
                 "value": LONG_PLAN, "then": "c", "else": "split"},
        "team": {"type": "condition", "field": "header.X-Team", "op": "equals", "value": "red",
                 "then": "a", "else": "split"},
        "split": {"type": "split", "by": by, "branches": [
            {"weight": 50, "next": "a"}, {"weight": 30, "next": "b"}, {"weight": 20, "next": "c"}]},
        "a": {"type": "model", "model": "openai/gpt-4o"},
        "b": {"type": "model", "model": "meta/llama-3.3-70b"},
        "c": {"type": "model", "model": "requested"},
    }, start="plan")  # fmt: skip


ROUTES = [_route(by) for by in ("session", "prompt_cache_key", "key", "random")]


def _live(request: dict[str, Any], key_id: int) -> tuple[Any, dict[str, Any], Any]:
    """(caller, body, headers) as the gateway sees one request."""
    meta = {"CONTENT_TYPE": "application/json", "HTTP_USER_AGENT": "OpenAI/Python 1.0"}
    for i in range(request.get("sdk_headers", 0)):  # the SDK's own x- headers come first
        meta[f"HTTP_X_STAINLESS_{i}"] = "v"
    if "header_session" in request:
        meta["HTTP_X_SESSION_ID"] = request["header_session"]
    if "team" in request:
        meta["HTTP_X_TEAM"] = request["team"]
    if "seed" in request:
        meta["HTTP_X_SWITCHYARD_ROUTE_SEED"] = str(request["seed"])
    metadata = {f"k{i}": "v" for i in range(request.get("extra_metadata", 0))}
    if "plan" in request:
        metadata["customer_plan"] = request["plan"]
    body: dict[str, Any] = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                            "metadata": metadata}  # fmt: skip
    if "body_session" in request:
        body["session_id"] = request["body_session"]
    if "prompt_cache_key" in request:
        body["prompt_cache_key"] = request["prompt_cache_key"]
    caller = SimpleNamespace(key=SimpleNamespace(routes=("r",), pk=key_id))
    return caller, body, HttpHeaders(meta)


@settings(max_examples=300, deadline=None)
@given(request=requests, key_id=st.integers(1, 10**6))
def test_r_bey_3_replayed_facts_walk_every_route_as_the_live_ones(request, key_id):
    caller, body, headers = _live(request, key_id)
    seed = request.get("seed", 12345)
    try:
        live = route_facts(caller, body, headers, operation="chat.completions", seed=seed)
    except Exception:  # a request the API refuses (a session id it does not accept)
        return
    assert live is not None
    stored = orjson.loads(orjson.dumps(route_inputs(live, body, {})))  # the trace's JSON
    replayed = replay_facts(stored, key_id=key_id, operation="chat.completions")
    usage = FixedUsage()
    for route in ROUTES:
        assert evaluate(route, replayed, usage).visited == evaluate(route, live, usage).visited
