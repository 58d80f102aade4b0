"""A new key works the moment its creation has answered (SPEC R-KEY-1, D-3): on every
worker of the replica that made it and on another replica, however far away their next
snapshot poll is; and a revoked key is still refused everywhere within 2 s.

Two replicas of their own on the shared installation's database: `a` with two server
workers and a snapshot poll of an hour, so only the miss lookup can make a new key known
there; `b` with one worker at the default poll (1 s), the revocation bound's replica. Each
has a Redis prefix of its own, so with REDIS_URL no announcement of the change reaches
either and the test means the same in both modes (.ci/run runs it in both)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import openai
import pytest

from gateway.processes import GatewayProcess, running_gateway
from tests.live.installation import Live

pytestmark = pytest.mark.live

WORKSPACE = "acme"
MODEL = "meta/llama-3.3-70b"
FRESH_CONNECTIONS = 20  # on `a`, after which `b` gets half as many
# A worker loads its first snapshot at its first request; so many fresh connections first
# make both of `a`'s workers load theirs (each misses one with odds of 2**-40).
WARM_UP_CONNECTIONS = 40
REVOKED_WITHIN_S = 2.0  # SPEC R-KEY-1


@dataclass(frozen=True, slots=True)
class Replicas:
    a: GatewayProcess  # two workers, a poll of an hour
    b: GatewayProcess  # one worker, the default poll
    token: str  # a management token of WORKSPACE


@pytest.fixture(scope="module")
def replicas(live: Live) -> Iterator[Replicas]:
    token = live.manage("createtoken", "--workspace", WORKSPACE, "--role", "admin").strip()
    far_poll = live.own_env(SWITCHYARD_SNAPSHOT_POLL_S="3600")
    default_poll = live.own_env(SWITCHYARD_SNAPSHOT_POLL_S="1")
    with running_gateway(far_poll, workers=2) as a, running_gateway(default_poll) as b:
        for gateway, times in ((a, WARM_UP_CONNECTIONS), (b, 1)):
            assert [_status(gateway, live.keys[WORKSPACE], 0) for _ in range(times)] == [
                200
            ] * times
        yield Replicas(a, b, token)


def _status(gateway: GatewayProcess, key: str, turn: int) -> int:
    """One call on a connection of its own (a new client each time): the model list, or
    every other turn a chat completion, so both doors of step 1 are tried."""
    with openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0, timeout=20) as sdk:
        try:
            if turn % 2:
                sdk.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "hi"}]
                )
            else:
                sdk.models.list()
        except openai.APIStatusError as error:
            return error.status_code
    return 200


def _statuses(replicas: Replicas, key: str) -> list[int]:
    on_a = [_status(replicas.a, key, turn) for turn in range(FRESH_CONNECTIONS)]
    return on_a + [_status(replicas.b, key, turn) for turn in range(FRESH_CONNECTIONS // 2)]


def _created_by_api(gateway: GatewayProcess, token: str, name: str) -> dict[str, str]:
    response = httpx.post(
        f"{gateway.url}/api/v1/workspaces/{WORKSPACE}/keys",
        headers={"Authorization": f"Bearer {token}"}, json={"name": name}, timeout=10,
    )  # fmt: skip
    assert response.status_code == 201, response.text
    return response.json()


def test_r_key_1_a_key_made_with_createkey_works_at_once_on_every_worker_and_replica(
    live, replicas
):
    # given a key made with manage.py, no gateway having polled since
    key = live.manage("createkey", "--workspace", WORKSPACE,
                      "--name", f"fresh-{uuid.uuid4().hex[:8]}").strip()  # fmt: skip
    # when it is used at once, on fresh connections to both workers of `a` and to `b`
    # then every request is served
    assert _statuses(replicas, key) == [200] * (FRESH_CONNECTIONS + FRESH_CONNECTIONS // 2)


def test_r_key_1_r_mgt_1_a_key_made_through_the_management_api_works_at_once(replicas):
    # given a key made through the management API of replica `a`
    key = _created_by_api(replicas.a, replicas.token, f"api-{uuid.uuid4().hex[:8]}")["key"]
    # when it is used at once, on fresh connections to both of `a`'s workers and to `b`
    # then every request is served
    assert _statuses(replicas, key) == [200] * (FRESH_CONNECTIONS + FRESH_CONNECTIONS // 2)


def test_r_key_1_d_3_a_key_first_found_by_lookup_is_refused_within_2_s_of_its_revocation(
    replicas,
):
    # given a new key that `b` learnt of from the database, before its snapshot had it
    created = _created_by_api(replicas.a, replicas.token, f"gone-{uuid.uuid4().hex[:8]}")
    key = created["key"]
    assert _status(replicas.b, key, 0) == 200
    # when it is revoked
    revoked = httpx.delete(
        f"{replicas.a.url}/api/v1/workspaces/{WORKSPACE}/keys/{created['id']}",
        headers={"Authorization": f"Bearer {replicas.token}"}, timeout=10,
    )  # fmt: skip
    assert revoked.is_success, revoked.text
    deadline = time.monotonic() + REVOKED_WITHIN_S
    # then `b` refuses it within 2 s, as an unknown key, and keeps refusing it
    while (status := _status(replicas.b, key, 0)) == 200:
        assert time.monotonic() < deadline, f"still served {REVOKED_WITHIN_S} s after revoking"
    assert status == 401
    assert [_status(replicas.b, key, turn) for turn in range(6)] == [401] * 6
