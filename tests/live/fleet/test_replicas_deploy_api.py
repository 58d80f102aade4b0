"""A deploy and a rollback made through one gateway are routing on another within 2 s
(SPEC R-ROUTE-2, D-25): two gateway processes on one database — on PostgreSQL with Redis in
CI, where the writer announces the change and the other replica checks at once; on SQLite
the other replica's own poll (the default, 1 s) finds it."""

from __future__ import annotations

import uuid

import httpx
import pytest

from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

WORKSPACE = """\
workspaces:
  - slug: replicated
    keys:
      - {name: replica-bot, routes: [moving]}
    routes:
      - slug: moving
        start: pick
        nodes:
          pick: {type: model, model: MODEL}
"""
DEADLINE_S = 2.0


def _apply(live: Live, model: str, *flags: str) -> None:
    path = live.log_path.parent / f"replicated-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(WORKSPACE.replace("MODEL", model))
    live.manage("apply", "-f", str(path), *flags)


def _chosen(base_url: str, key: str) -> str | None:
    body = {"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(f"{base_url}/routing/explain", json=body,
                        headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    return (answer.json().get("route") or {}).get("model") if answer.status_code == 200 else None


def test_d_25_a_deploy_and_a_rollback_through_one_gateway_route_on_the_other(fresh_live):
    # given v1 deployed (acme/tiny) and v2 saved (acme/mini), and a second gateway on the same
    # database with the default snapshot poll
    _apply(fresh_live, "acme/tiny", "--deploy")
    _apply(fresh_live, "acme/mini")
    key = fresh_live.manage("createkey", "--workspace", "replicated", "--name", "replica-bot")
    key = key.strip()
    token = fresh_live.manage("createtoken", "--workspace", "replicated", "--role", "admin")
    token = token.strip()
    env = {**fresh_live.env, "SWITCHYARD_SNAPSHOT_POLL_S": "1.0"}
    with running_gateway(env) as other:
        other_url = other.base_url
        wait_for(lambda: _chosen(other_url, key) == "acme/tiny", "v1 on the other gateway", 5)
        api = f"{fresh_live.gateway.url}/api/v1/workspaces/replicated/routes/moving"
        admin = {"Authorization": f"Bearer {token}"}
        # when v2 is deployed through the first gateway's management API
        deployed = httpx.post(f"{api}/deploy", json={"version": 2}, headers=admin)
        assert deployed.status_code == 200, deployed.text
        # then the other gateway routes by it within 2 s
        wait_for(lambda: _chosen(other_url, key) == "acme/mini", "the deploy of v2 on the other",
                 DEADLINE_S)  # fmt: skip
        # when it is rolled back through the first gateway
        rolled = httpx.post(f"{api}/rollback", json={}, headers=admin)
        assert rolled.status_code == 200, rolled.text
        # then the other gateway routes by v1 again within 2 s
        wait_for(lambda: _chosen(other_url, key) == "acme/tiny", "the rollback to v1 on the other",
                 DEADLINE_S)  # fmt: skip
