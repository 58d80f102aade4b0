"""Rate limits through a live gateway (SPEC R-LIM-1, D-29): requests per minute of a key
and of its workspace, tokens per minute, concurrent requests; a refusal is 429
`rate_limited` with an accurate Retry-After, and every admitted response carries the
x-ratelimit-* headers of the kinds that applied. A model of its own, so no other test's
traffic reaches its endpoint."""

from __future__ import annotations

import concurrent.futures

import httpx
import openai
import pytest

from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MODEL = "limits/fast"


def limited(live: Live, slug: str, workspace: str, key: str) -> str:
    """Apply a workspace with `workspace` limits and a key named `bot` with `key` limits;
    return that key once the gateway accepts it."""
    path = live.log_path.parent / f"limits-{slug}.yaml"
    path.write_text(f"""\
models:
  - {{slug: {MODEL}, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: cheap-limits, provider: cheap, model: {MODEL}, upstream_model: limits-up,
      region: us-east-1, price: {{input: 1, output: 1}}, sovereignty_class: any}}
workspaces:
  - slug: {slug}
    {workspace}
    keys:
      - {{name: bot, {key}}}
""")  # fmt: skip
    live.manage("apply", "-f", str(path))
    secret = live.new_key(slug, "bot")
    client = openai.OpenAI(base_url=live.base_url, api_key=secret, max_retries=0)
    live.wait_for_model(client, MODEL)
    return secret


def accepted(live: Live, key: str) -> bool:
    """Whether the gateway's snapshot has `key` (`/v1/models` counts against no limit)."""
    answer = httpx.get(f"{live.base_url}/models", headers={"Authorization": f"Bearer {key}"})
    return answer.status_code == 200


def in_flight(live: Live, workspace: str, token: str, key_name: str) -> int | None:
    """The key name's requests holding a concurrency slot now, as the management API reads
    them from the limit store the gateway admits with."""
    answer = httpx.get(f"{live.gateway.url}/api/v1/workspaces/{workspace}/limits",
                       headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
    assert answer.status_code == 200, answer.text
    row = next(row for row in answer.json() if row["key_name"] == key_name)
    return None if row["in_use"] is None else row["in_use"]["concurrent"]["used"]


def ask(live: Live, key: str, model: str = MODEL, **extra: object) -> httpx.Response:
    return httpx.post(
        f"{live.base_url}/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], **extra},
        timeout=30,
    )


def test_r_lim_1_a_key_over_its_requests_per_minute_is_429_with_retry_after(fresh_live):
    key = limited(fresh_live, "lim-rpm", "limits: {requests_per_minute: 1000}",
                  "limits: {requests_per_minute: 3}")  # fmt: skip
    # when
    answers = [ask(fresh_live, key) for _ in range(4)]
    # then three are served, with the headers of the key's limit (the tightest)
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    first, refused = answers[0], answers[3]
    assert first.headers["x-ratelimit-limit-requests"] == "3"
    assert first.headers["x-ratelimit-remaining-requests"] == "2"
    assert first.headers["x-ratelimit-reset-requests"].endswith("s")
    assert "x-ratelimit-limit-tokens" not in first.headers  # no token limit applied (D-29)
    # and the refusal says when to come back: one request's worth, 20 s at 3 a minute
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 20
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"


def test_r_lim_1_the_workspace_limit_holds_over_all_its_keys(fresh_live):
    key = limited(fresh_live, "lim-ws", "limits: {requests_per_minute: 2}",
                  "limits: {concurrent: 10}")  # fmt: skip
    other = fresh_live.manage("createkey", "--workspace", "lim-ws").strip()
    wait_for(lambda: accepted(fresh_live, other), "the second key to reach the snapshot")
    # when
    statuses = [ask(fresh_live, k).status_code for k in (key, other, other)]
    # then
    assert statuses == [200, 200, 429]


def test_r_lim_1_tokens_per_minute_reserve_input_and_max_tokens(fresh_live):
    key = limited(fresh_live, "lim-tpm", "limits: {tokens_per_minute: 100}", "limits: {}")
    # when a request asks for more than the minute's tokens
    too_big = ask(fresh_live, key, max_tokens=200)
    small = ask(fresh_live, key, max_tokens=20)
    # then it is refused outright, and a small one is served with the token headers
    assert too_big.status_code == 429
    assert small.status_code == 200
    assert small.headers["x-ratelimit-limit-tokens"] == "100"
    assert int(small.headers["x-ratelimit-remaining-tokens"]) < 100
    assert fresh_live.fakes["cheap"].stats()["requests"] == 1


def test_r_lim_1_concurrent_requests_beyond_the_limit_are_refused(fresh_live):
    key = limited(fresh_live, "lim-conc", "limits: {}", "limits: {concurrent: 2}")
    fresh_live.fakes["cheap"].set_faults([{"fault": "latency:3000", "times": None}])
    # (a token to read the slots in use with, made while the requests wait on the upstream)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as aside:
        token = aside.submit(fresh_live.manage, "createtoken", "--workspace", "lim-conc",
                             "--role", "viewer")  # fmt: skip
        # when five arrive at once
        with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
            statuses = sorted(pool.map(lambda _: ask(fresh_live, key).status_code, range(5)))
        viewer = token.result().strip()
    # then two were served; and once they are done, the slots are free again
    assert statuses == [200, 200, 429, 429, 429]
    fresh_live.fakes["cheap"].set_faults([])
    # (leases go back with the settlements, just after the answers)
    wait_for(lambda: in_flight(fresh_live, "lim-conc", viewer, "bot") == 0,
             "the served requests' concurrency slots to be given back")  # fmt: skip
    assert ask(fresh_live, key).status_code == 200
