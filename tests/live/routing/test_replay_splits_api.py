"""Replay predicts each split exactly (SPEC R-BEY-3): recorded requests of a key whose
route sends everything to one model; a draft sends `pro` customers through a 50/50 split;
the replay's prediction for each request is where that request goes once the draft is
deployed — whatever the split reads: the session header, the body's `session_id`, the
`prompt_cache_key`, the key id, or `random` with the request's seed."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

REQUESTS = 24
ROUTE = """\
workspaces:
  - slug: {ws}
    policy: {{max_attempts: 2, routing_mode: price}}
    routes:
      - slug: plans
        start: {start}
        nodes:
          a: {{type: model, model: acme/tiny}}
{draft}    keys:
      - {{name: plans-bot, routes: [plans]}}
"""
DRAFT = """\
          plan: {{type: condition, field: metadata.customer_plan, op: equals, value: pro,
                 then: split, else: a}}
          split: {{type: split, by: {by}, branches: [{{weight: 50, next: a}},
                                                   {{weight: 50, next: b}}]}}
          b: {{type: model, model: acme/mini}}
"""
# How each variant's request i identifies itself: (split by, headers, body fields).
VARIANTS = {
    "session-header": ("session", lambda i: {"X-Session-Id": f"s-{i}"}, lambda i: {}),
    "session-body": ("session", lambda i: {}, lambda i: {"session_id": f"b-{i}"}),
    "prompt-cache-key": (
        "prompt_cache_key",
        lambda i: {},
        lambda i: {"prompt_cache_key": f"c-{i}"},
    ),
    "random-seed": ("random", lambda i: {"X-Switchyard-Route-Seed": str(1000 + i)}, lambda i: {}),
}


def _apply(live: Live, text: str, *flags: str) -> None:
    path = live.log_path.parent / f"plans-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    live.manage("apply", "-f", str(path), *flags)


def _send(live: Live, key: str, variant: str) -> dict[int, tuple[str, str]]:
    """The same requests each time: (route end, model) by index."""
    _by, headers, fields = VARIANTS[variant]
    went = {}
    with httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {key}"},
                      timeout=20) as client:  # fmt: skip
        for i in range(REQUESTS):
            body = {"model": "acme/tiny", "messages": [{"role": "user", "content": "hi"}],
                    "metadata": {"customer_plan": "pro" if i % 2 else "free", "i": str(i)},
                    **fields(i)}  # fmt: skip
            answer = client.post("/chat/completions", json=body, headers=headers(i))
            assert answer.status_code == 200, answer.text
            block = answer.json()["switchyard"]
            went[i] = (block["route_nodes"][-1], block["model"])
    return went


def _count(live: Live, ws: str) -> int:
    code = ("from audit.models import RequestTrace as T; "
            f"print(T.objects.filter(workspace__slug='{ws}', purpose='').count())")  # fmt: skip
    return int(live.manage("shell", "--no-imports", "-c", code).strip())


def _version(live: Live, key: str) -> int | None:
    body = {"model": "acme/tiny", "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(f"{live.base_url}/routing/explain", json=body,
                        headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    return (answer.json().get("route") or {}).get("version") if answer.status_code == 200 else None


@pytest.mark.parametrize("variant", VARIANTS)
def test_r_bey_3_each_split_request_goes_where_the_replay_said(fresh_live, variant):
    ws = f"plans-{variant}"
    by = VARIANTS[variant][0]
    # given v1 (everything to `a`) and the requests it served, traced
    _apply(fresh_live, ROUTE.format(ws=ws, start="a", draft=""), "--deploy")
    key = fresh_live.new_key(ws, "plans-bot")
    wait_for(lambda: _version(fresh_live, key) == 1, "v1 to reach the gateway", 10)
    _send(fresh_live, key, variant)
    wait_for(lambda: _count(fresh_live, ws) == REQUESTS, f"all {REQUESTS} traces to be written", 10)
    # when the draft v2 is replayed over them, twice
    _apply(fresh_live, ROUTE.format(ws=ws, start="plan", draft=DRAFT.format(by=by)))
    replay = ("route", "replay", "plans", "--workspace", ws, "--version", "2", "--since", "1h",
              "--json", "--predictions")  # fmt: skip
    reports = [json.loads(fresh_live.manage(*replay)) for _ in range(2)]
    # then both runs agree
    assert reports[0] == reports[1]
    predicted = sorted(p["model"] for p in reports[0]["predictions"].values())
    # and once v2 is deployed, the same requests go exactly where it said
    fresh_live.manage("route", "deploy", "plans", "--workspace", ws, "--version", "2")
    wait_for(lambda: _version(fresh_live, key) == 2, "v2 to reach the gateway", 10)
    after = _send(fresh_live, key, variant)
    assert sorted(model for _node, model in after.values()) == predicted
    moved = sum(model == "acme/mini" for _node, model in after.values())
    assert reports[0]["changed"]["model"] == moved
    assert 0 < moved < REQUESTS // 2
