"""Replay (SPEC R-BEY-3, D-25): a draft route version replayed over 1,000 recorded requests
of its key — from the traces' decision inputs, calling no upstream — predicts exactly what
a live run of the same requests does once that version is deployed."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

REQUESTS = 1000
ROUTE = """\
    policy: {{max_attempts: 2, routing_mode: price}}
    routes:
      - slug: replayed
        models: ["support-*"]
        start: plan
        nodes:
          plan: {{type: condition, field: metadata.tier, op: equals, value: gold,
                 then: gold, else: split}}
          split: {{type: split, by: session, branches: [{{weight: {a}, next: a}},
                                                       {{weight: {b}, next: b}}]}}
          gold: {{type: model, model: {gold}}}
          a: {{type: model, model: meta/llama-3.3-70b{a_provider}}}
          b: {{type: model, model: acme/tiny}}
    keys:
      - {{name: replay-bot, routes: [replayed]}}
"""
V1 = ROUTE.format(a=50, b=50, gold="acme/mini", a_provider="")
V2 = ROUTE.format(a=20, b=80, gold="acme/tiny", a_provider=", provider: {only: [pricey]}")


def _apply(live: Live, body: str, *flags: str) -> None:
    path = live.log_path.parent / f"replay-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"workspaces:\n  - slug: replaying\n{body}")
    live.manage("apply", "-f", str(path), *flags)


def _send(live: Live, key: str) -> dict[str, tuple]:
    """The same 1,000 requests each time: (route end, model, endpoint) by session id."""

    def one(index: int) -> tuple[str, tuple]:
        session = f"replay-session-{index}"
        body = {"model": "support-bot", "messages": [{"role": "user", "content": "hi"}],
                "metadata": {"tier": "gold" if index % 10 == 0 else "basic"}}  # fmt: skip
        answer = client.post("/chat/completions", json=body, headers={"X-Session-Id": session})
        assert answer.status_code == 200, answer.text
        block = answer.json()["switchyard"]
        return session, (block["route_nodes"][-1], block["model"], block["endpoint"])

    with httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {key}"},
                      timeout=20) as client, ThreadPoolExecutor(4) as pool:  # fmt: skip
        return dict(pool.map(one, range(REQUESTS)))


def test_r_bey_3_replay_of_a_draft_matches_a_live_run_of_the_same_requests(fresh_live):
    # given version 1 deployed and 1,000 requests served under it
    _apply(fresh_live, V1, "--deploy")
    key = fresh_live.manage("createkey", "--workspace", "replaying", "--name", "replay-bot")
    key = key.strip()
    wait_for(lambda: _version(fresh_live, key) == 1, "v1 to reach the gateway", 5)
    before = _send(fresh_live, key)
    # the trace writer batches them off the path
    wait_for(lambda: _traces(fresh_live) >= REQUESTS, f"all {REQUESTS} traces to be written", 20,
             interval_s=0.2)  # fmt: skip
    # and a draft version 2
    _apply(fresh_live, V2)
    calls = sum(fake.stats()["requests"] for fake in fresh_live.fakes.values())
    # when it is replayed over them
    started = time.monotonic()
    printed = fresh_live.manage(
        "route", "replay", "replayed", "--workspace", "replaying",
        "--version", "2", "--since", "1h", "--json", "--predictions",
    )  # fmt: skip
    elapsed_s = time.monotonic() - started
    report = json.loads(printed)
    # then it took no upstream call, and under 5 s with the command's own start-up
    assert sum(fake.stats()["requests"] for fake in fresh_live.fakes.values()) == calls
    assert elapsed_s < 5, f"the replay took {elapsed_s:.2f} s"
    assert (report["total"], report["deployed"]) == (REQUESTS, 1)
    predicted = {p["session_id"]: (p["node"], p["model"], p["endpoint"])
                 for p in report["predictions"].values()}  # fmt: skip
    # when version 2 is deployed and the same requests are sent again
    fresh_live.manage("route", "deploy", "replayed", "--workspace", "replaying", "--version", "2")
    wait_for(lambda: _version(fresh_live, key) == 2, "v2 to reach the gateway", 5)
    after = _send(fresh_live, key)
    # then each request went exactly where the replay said
    wrong = {s: (predicted.get(s), went) for s, went in after.items() if predicted.get(s) != went}
    assert not wrong, f"{len(wrong)} mispredicted, e.g. {list(wrong.items())[:3]}"
    assert len(predicted) == REQUESTS
    # and the report's counts are those of the differences
    changed = {what: sum(before[s][i] != after[s][i] for s in after)
               for i, what in enumerate(("node", "model", "endpoint"))}  # fmt: skip
    assert report["changed"] == changed
    assert changed["node"] > 0
    assert report["refused"] == 0


COUNT = (
    "from audit.models import RequestTrace as T; "
    "print(T.objects.filter(workspace__slug='replaying', purpose='').count())"
)


def _traces(live: Live) -> int:
    return int(live.manage("shell", "--no-imports", "-c", COUNT).strip())


def _version(live: Live, key: str) -> int | None:
    """The route version the gateway's snapshot routes the key's requests by."""
    body = {"model": "support-bot", "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(f"{live.base_url}/routing/explain", json=body,
                        headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    return (answer.json()["route"] or {}).get("version") if answer.status_code == 200 else None
