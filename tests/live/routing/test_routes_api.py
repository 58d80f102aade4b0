"""Dynamic routes through a live gateway (SPEC R-ROUTE-1, R-ROUTE-2, D-23, D-25, D-27):
applied with `manage.py apply --deploy` while the gateway runs, to a workspace of its own,
attached to keys by name."""

from __future__ import annotations

import math
import time
import uuid
from collections import Counter

import httpx
import openai
import pytest

from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "Say hello"}]
ROUTES = """\
    policy: {max_attempts: 2, routing_mode: price}
    routes:
      - slug: support-routing
        models: ["auto", "support-*"]
        start: plan
        nodes:
          plan: {type: condition, field: metadata.customer_plan, op: equals, value: pro,
                 then: big, else: split}
          split: {type: split, by: session, branches: [{weight: 90, next: small},
                                                       {weight: 10, next: canary}]}
          big: {type: model, model: anthropic/claude-sonnet-4}
          small: {type: model, model: meta/llama-3.3-70b, provider: {only: [pricey]}}
          canary: {type: model, model: acme/mini}
      - slug: limited
        start: slow
        nodes:
          slow: {type: rate_limit, period: minute, requests: 2, within: ok, exceeded: refuse}
          ok: {type: model, model: requested}
          refuse: {type: reject, status: 429, message: "Over this key's limit."}
      - slug: draft-only
        start: only
        nodes:
          only: {type: model, model: acme/tiny}
      - slug: switchable
        start: pick
        nodes:
          pick: {type: model, model: acme/tiny}
    keys:
      - {name: support-bot, routes: [support-routing]}
      - {name: limited-bot, routes: [limited]}
      - {name: draft-bot, routes: [draft-only]}
      - {name: switch-bot, routes: [switchable]}
      - {name: narrow-bot, allowed_models: ["meta/*"], routes: [draft-only, limited]}
"""


def _apply(live: Live, body: str, *flags: str) -> str:
    path = live.log_path.parent / f"routed-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"workspaces:\n  - slug: routed\n{body}")
    return live.manage("apply", "-f", str(path), *flags)


@pytest.fixture(scope="module")
def routed(live: Live) -> dict[str, str]:
    _apply(live, ROUTES)
    # only the two routes deployed; `draft-only` stays a draft (D-25)
    for slug in ("support-routing", "limited", "switchable"):
        live.manage("route", "deploy", slug, "--workspace", "routed")
    names = ("support-bot", "limited-bot", "draft-bot", "switch-bot", "narrow-bot")
    keys = {name: live.new_key("routed", name) for name in names}
    # the deploys are in the gateway's snapshot: each deployed route walks its key's requests
    for name, slug, model in (("support-bot", "support-routing", "auto"),
                              ("limited-bot", "limited", "acme/tiny"),
                              ("switch-bot", "switchable", "meta/llama-3.3-70b"),
                              ("narrow-bot", "limited", "meta/llama-3.3-70b")):  # fmt: skip
        _wait_until_routed(live, keys[name], model, (slug, 1), f"{name}'s requests")
    return keys


def _client(live: Live, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0, timeout=20)


def _routed_by(live: Live, key: str, model: str) -> tuple[str, int] | None:
    """The route (slug, version) the gateway's snapshot walks the key's request by, if any:
    a dry run, which calls no upstream and counts against no limit."""
    route = live.explain(key, {"model": model, "messages": MESSAGES})["route"]
    return None if route is None else (route["slug"], route["version"])


def _wait_until_routed(live: Live, key: str, model: str, route: tuple[str, int], what: str) -> None:
    wait_for(lambda: _routed_by(live, key, model) == route,
             f"version {route[1]} of {route[0]} to route {what}")  # fmt: skip


def test_r_route_1_a_condition_on_metadata_picks_the_model_and_says_why(fresh_live, routed):
    # when a pro customer asks for auto
    reply = _client(fresh_live, routed["support-bot"]).chat.completions.create(
        model="auto", messages=MESSAGES, metadata={"customer_plan": "pro"}
    )
    # then the route's model beat the auto router, and the block names the route (D-23)
    block = reply.model_extra["switchyard"]
    assert (block["model"], block["provider"]) == ("anthropic/claude-sonnet-4", "anthro")
    assert (block["route"], block["route_version"], block["route_nodes"]) == (
        "support-routing", 1, ["plan", "big"],
    )  # fmt: skip
    # and the trace's decision record lists each node with why its exit was taken
    trace = httpx.get(f"{fresh_live.base_url}/traces/{block['trace_id']}",
                      headers={"Authorization": f"Bearer {routed['support-bot']}"})  # fmt: skip
    route = trace.json()["decision"]["route"]
    assert route["nodes"][0] == {
        "node": "plan", "type": "condition", "exit": "then", "next": "big",
        "why": "metadata.customer_plan equals 'pro': true",
    }  # fmt: skip
    assert (route["model"], route["overrode_auto"]) == ("anthropic/claude-sonnet-4", True)
    # and it keeps the decision inputs a replay needs, never content or a credential (R-BEY-3)
    inputs = trace.json()["decision"]["route_inputs"]
    assert (inputs["requested_model"], inputs["metadata"]) == ("auto", {"customer_plan": "pro"})
    assert "messages" not in inputs["body"]
    assert "authorization" not in inputs["headers"]
    assert "Say hello" not in trace.text
    assert routed["support-bot"] not in trace.text


def test_r_route_1_a_split_keeps_each_session_on_its_branch_in_its_shares(fresh_live, routed):
    # when 200 sessions are explained (a dry run: no upstream call), each twice
    body = {"model": "auto", "messages": MESSAGES}
    ends = Counter()
    for index in range(200):
        session = f"session-{index}"
        first = fresh_live.explain(routed["support-bot"], body, headers={"X-Session-Id": session})
        again = fresh_live.explain(routed["support-bot"], body, headers={"X-Session-Id": session})
        assert first["route"]["terminal"] == again["route"]["terminal"]
        ends[first["route"]["terminal"]] += 1
    # then the 90/10 split holds (binomial: 20 expected, 5 sigma is about 21; the engine's
    # property tests check 2 % over 10,000 sessions)
    assert set(ends) == {"small", "canary"}
    assert 4 <= ends["canary"] <= 41
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_r_route_1_a_model_node_narrows_the_providers(fresh_live, routed):
    # when a non-pro session lands on `small` (price routing would pick cheap first)
    body = {"model": "support-anything", "messages": MESSAGES}
    session = next(
        s for s in (f"s{i}" for i in range(100))
        if fresh_live.explain(routed["support-bot"], body,
                              headers={"X-Session-Id": s})["route"]["terminal"] == "small"
    )  # fmt: skip
    reply = _client(fresh_live, routed["support-bot"]).chat.completions.create(
        model="support-anything", messages=MESSAGES, extra_headers={"X-Session-Id": session}
    )
    # then only the provider the node allows served it
    assert reply.model_extra["switchyard"]["endpoint"] == "pricey-llama"
    assert fresh_live.fakes["cheap"].stats()["requests"] == 0


def test_d_23_a_model_no_attached_route_handles_is_resolved_as_usual(fresh_live, routed):
    reply = _client(fresh_live, routed["support-bot"]).chat.completions.create(
        model="meta/llama-3.3-70b", messages=MESSAGES
    )
    block = reply.model_extra["switchyard"]
    assert block["endpoint"] == "cheap-llama"
    assert "route" not in block


def test_r_bey_5_a_route_never_takes_a_key_outside_its_allowed_models(fresh_live, routed):
    # when the key's route keeps the model asked for, one the key may not use
    with pytest.raises(openai.PermissionDeniedError) as refused:
        _client(fresh_live, routed["narrow-bot"]).chat.completions.create(
            model="acme/tiny", messages=MESSAGES
        )
    # then it is refused before any call
    assert refused.value.code == "model_not_allowed"
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_d_25_an_undeployed_route_routes_nothing(fresh_live, routed):
    reply = _client(fresh_live, routed["draft-bot"]).chat.completions.create(
        model="meta/llama-3.3-70b", messages=MESSAGES
    )
    assert reply.model_extra["switchyard"]["model"] == "meta/llama-3.3-70b"
    assert "route" not in reply.model_extra["switchyard"]


# The rate_limit node counts the requests of each calendar minute (UTC, as every period of
# routing/engine/routes/periods.py): the test's three requests must fall in one minute.
MINUTE_ROOM_S = 2.0


def test_d_27_a_rate_limit_node_refuses_with_retry_after(fresh_live, routed):
    # given the key's two requests of this minute (one with room for all three requests,
    # waiting for the next to start if this one is nearly over, so the test is stable)
    wait_for(lambda: 60 - time.time() % 60 > MINUTE_ROOM_S,
             f"a minute with {MINUTE_ROOM_S} s left", timeout_s=MINUTE_ROOM_S + 5)  # fmt: skip
    minute_ends = (time.time() // 60 + 1) * 60
    client = _client(fresh_live, routed["limited-bot"])
    for _ in range(2):
        client.chat.completions.create(model="acme/tiny", messages=MESSAGES)
    # when a third comes in the same minute
    asked = time.time()
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="acme/tiny", messages=MESSAGES)
    answered = time.time()
    assert answered < minute_ends, "the minute ended before the third request was answered"
    # then the reject node answers, with the seconds until the minute resets
    assert (refused.value.code, refused.value.body["message"]) == (
        "rate_limited", "Over this key's limit.",
    )  # fmt: skip
    retry_after = int(refused.value.response.headers["retry-after"])
    assert 1 <= retry_after <= 60
    assert max(1, math.ceil(minute_ends - answered)) <= retry_after
    assert retry_after <= math.ceil(minute_ends - asked)
    assert fresh_live.fakes["cheap"].stats()["requests"] == 2


def test_r_route_2_a_new_version_deployed_and_rolled_back_reaches_the_gateway(fresh_live, routed):
    # given a second version of `switchable` that sends everything to acme/mini, in a file
    # naming that route alone (`--deploy` deploys each route of the file, and `draft-only`
    # stays a draft for the other tests, whatever their order)
    changed = """\
    routes:
      - slug: switchable
        start: pick
        nodes:
          pick: {type: model, model: acme/mini}
"""
    report = _apply(fresh_live, changed, "--deploy")
    assert "updated route routed/switchable: version 2, deployed v2" in report

    def served_by() -> str:
        body = {"model": "meta/llama-3.3-70b", "messages": MESSAGES}
        return fresh_live.explain(routed["switch-bot"], body)["route"]["model"]

    # then the gateway routes by it within 2 s
    wait_for(lambda: served_by() == "acme/mini", "version 2 to route", timeout_s=2.0)
    # when rolled back
    fresh_live.manage("route", "rollback", "switchable", "--workspace", "routed")
    # then the first version routes again within 2 s
    wait_for(lambda: served_by() == "acme/tiny", "version 1 to route again", timeout_s=2.0)
