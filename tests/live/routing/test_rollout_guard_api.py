"""The rollout guard in a live gateway (SPEC R-BEY-4, D-26): errors injected on the canary
node's provider roll the route back within one guard interval (0.5 s in these tests, the
in-process scheduler of the embedded default), and the audit event shows the numbers."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

WORKSPACE = """\
workspaces:
  - slug: guarded
    policy: {max_attempts: 1, routing_mode: price}
    keys:
      - {name: guarded-bot, routes: [canaried]}
    routes:
      - slug: canaried
"""
V1 = (
    WORKSPACE
    + """\
        start: stable
        nodes:
          stable: {type: model, model: acme/tiny}
"""
)
V2 = (
    WORKSPACE
    + """\
        start: split
        nodes:
          split: {type: split, by: session, branches: [{weight: 50, next: stable},
                                                       {weight: 50, next: canary}]}
          stable: {type: model, model: acme/tiny}
          canary: {type: model, model: acme/mini}
        rollout_guard: {node: canary, baseline: stable, min_requests: 10,
                        max_error_rate_delta: 0.2}
"""
)
AUDIT = (
    "import json; from audit.models import AdminEvent as E; "
    "e = E.objects.filter(action='route.guard_rollback').latest('id'); "
    "print(json.dumps({'actor': e.actor, 'target': e.target, 'changes': e.changes}))"
)


def _apply(live: Live, text: str) -> None:
    path = live.log_path.parent / f"guarded-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    live.manage("apply", "-f", str(path), "--deploy")


def _explained_version(live: Live, key: str) -> int | None:
    body = {"model": "acme/tiny", "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(f"{live.base_url}/routing/explain", json=body,
                        headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    return (answer.json().get("route") or {}).get("version") if answer.status_code == 200 else None


def test_r_bey_4_errors_on_the_canary_roll_back_within_one_interval(fresh_live):
    # given v1 (everything on `stable`) then v2 (a 50/50 canary, guarded) deployed
    _apply(fresh_live, V1)
    _apply(fresh_live, V2)
    key = fresh_live.manage("createkey", "--workspace", "guarded", "--name", "guarded-bot")
    key = key.strip()
    wait_for(lambda: _explained_version(fresh_live, key) == 2, "v2 to reach the gateway", 5)
    # when the canary's provider fails every call and 60 sessions are served
    fresh_live.fakes["pricey"].set_faults(["status:500"] * 1000)
    with httpx.Client(base_url=fresh_live.base_url, timeout=20,
                      headers={"Authorization": f"Bearer {key}"}) as client:  # fmt: skip
        statuses = [
            client.post("/chat/completions", headers={"X-Session-Id": f"guard-{i}"}, json={
                "model": "acme/tiny", "messages": [{"role": "user", "content": "hi"}]},
            ).status_code
            for i in range(60)
        ]  # fmt: skip
    served_at = time.monotonic()
    failed = len(statuses) - statuses.count(200)
    assert 10 <= failed <= 50  # the canary's share failed (502), the rest was served
    # then within one interval (0.5 s) plus a trace flush and a snapshot poll, v1 is back
    wait_for(lambda: _explained_version(fresh_live, key) == 1,
             "the guard's rollback to v1 within 3 s of the failures",
             served_at + 3 - time.monotonic())  # fmt: skip
    # and the audit event shows the numbers it compared
    event = json.loads(fresh_live.manage("shell", "--no-imports", "-c", AUDIT))
    assert (event["actor"], event["target"]) == ("rollout-guard", "canaried v1")
    numbers = event["changes"]["numbers"]
    assert (numbers["watched_error_rate"], numbers["baseline_error_rate"]) == (1.0, 0.0)
    assert numbers["watched"] == "canary"
