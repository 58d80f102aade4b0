"""Profiles and flags that need their own server (api key, models, error rate, cache,
pacing), and the stats endpoint."""

from __future__ import annotations

import hashlib
import random
import time

import httpx
import orjson
import pytest

from fakeupstream.faults import draw_error_status
from fakeupstream.process import running_fake_upstream
from tests.fakeupstream.conftest import ANTHROPIC_AUTH, OPENAI_AUTH, chat_body

CHAT = "/v1/chat/completions"


def test_stats_count_v1_requests_and_hash_credentials(fake, client):
    # given
    client.post(CHAT, json=chat_body(), headers=OPENAI_AUTH)
    client.get("/_fake/health")  # control calls are not counted
    # when
    client.post("/v1/messages", json={"model": "c", "messages": [{"role": "user", "content": "x"}]},
                headers={**ANTHROPIC_AUTH, "authorization": "Bearer other"})  # fmt: skip
    stats = fake.stats()
    # then
    assert stats["requests"] == 2
    assert stats["by_path"] == {CHAT: 1, "/v1/messages": 1}
    last = stats["last_request"]
    assert last["path"] == "/v1/messages"
    assert last["body"]["model"] == "c"
    assert last["headers"]["x-api-key"] == hashlib.sha256(b"sk-ant-test").hexdigest()
    assert last["headers"]["authorization"] == hashlib.sha256(b"Bearer other").hexdigest()
    assert "sk-ant-test" not in orjson.dumps(stats).decode()


def test_reset_clears_stats(fake, client):
    # given
    client.post(CHAT, json=chat_body(), headers=OPENAI_AUTH)
    # when
    fake.reset()
    # then
    assert fake.stats()["requests"] == 0
    assert fake.stats()["last_request"] is None


def test_stats_add_up_the_usage_each_reply_reported_by_user(fake, client):
    # given two requests of one user, one streamed, and one of another; one without a user
    reported = []
    for user, stream in (("ann", False), ("ann", True), ("bob", False), (None, False)):
        body = {**chat_body(), "stream": stream, "stream_options": {"include_usage": True}}
        if user:
            body["user"] = user
        answer = client.post(CHAT, json=body, headers=OPENAI_AUTH)
        if stream:
            lines = [line for line in answer.text.splitlines() if line.startswith("data: {")]
            usage = orjson.loads(lines[-1][len("data: ") :])["usage"]
        else:
            usage = answer.json()["usage"]
        reported.append((user, usage["prompt_tokens"], usage["completion_tokens"]))

    # then the stats hold, by user, what the replies reported
    def total(user: str, field: int) -> int:
        return sum(r[field] for r in reported if r[0] == user)

    assert fake.stats()["usage_by_user"] == {
        user: {"requests": sum(r[0] == user for r in reported),
               "prompt_tokens": total(user, 1), "completion_tokens": total(user, 2)}
        for user in ("ann", "bob")
    }  # fmt: skip
    # and a reset forgets them
    fake.reset()
    assert fake.stats()["usage_by_user"] == {}


@pytest.fixture(scope="module")
def keyed():
    with running_fake_upstream(api_key="sk-right", models=["m1", "m2"], name="acme") as fake:
        yield fake


@pytest.mark.parametrize(
    ("_case", "authorization", "expected"),
    [("right key", "Bearer sk-right", 200), ("wrong key", "Bearer sk-wrong", 401)],
)
def test_api_key_flag_accepts_only_that_key(keyed, _case, authorization, expected):
    # when
    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{keyed.base_url}/chat/completions", json=body,
                          headers={"Authorization": authorization})  # fmt: skip
    # then
    assert response.status_code == expected


def test_models_flag_lists_and_restricts_models(keyed):
    # given
    auth = {"Authorization": "Bearer sk-right"}
    body = {"model": "m3", "messages": [{"role": "user", "content": "hi"}]}
    # when
    listed = httpx.get(f"{keyed.base_url}/models", headers=auth).json()
    unknown = httpx.post(f"{keyed.base_url}/chat/completions", json=body, headers=auth)
    # then
    assert [m["id"] for m in listed["data"]] == ["m1", "m2"]
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"


def test_name_flag_appears_in_the_reply(keyed):
    # when
    body = {"model": "m1", "max_tokens": 7, "messages": [{"role": "user", "content": "hi"}]}
    reply = httpx.post(f"{keyed.base_url}/chat/completions", json=body,
                       headers={"Authorization": "Bearer sk-right"}).json()  # fmt: skip
    # then
    assert reply["choices"][0]["message"]["content"] == "This is a fake reply from acme."


def test_flaky_error_rate_follows_the_seed_and_repeats_after_reset():
    # given
    expected_rng = random.Random(7)
    expected = [draw_error_status(expected_rng, {503: 0.3, 429: 0.1}) or 200 for _ in range(30)]
    with running_fake_upstream("flaky", seed=7) as fake, httpx.Client() as http:

        def run() -> list[int]:
            url = f"{fake.base_url}/chat/completions"
            return [http.post(url, json=chat_body(), headers=OPENAI_AUTH).status_code
                    for _ in range(30)]  # fmt: skip

        # when
        first = run()
        fake.reset()
        second = run()
    # then
    assert first == expected
    assert second == first
    assert {200, 503, 429} <= set(first)


def test_cached_profile_reports_cache_reads_for_a_repeated_first_message():
    # given
    body = chat_body("a long enough prompt " * 4)  # 84 characters -> 21 prompt tokens
    with running_fake_upstream("cached") as fake, httpx.Client(base_url=fake.root_url) as http:
        # when
        first = http.post(CHAT, json=body, headers=OPENAI_AUTH).json()["usage"]
        again = http.post(CHAT, json=body, headers=OPENAI_AUTH).json()["usage"]
        anthropic_body = {"model": "c", "max_tokens": 2, "messages": body["messages"]}
        http.post("/v1/messages", json=anthropic_body, headers=ANTHROPIC_AUTH)
        claude = http.post("/v1/messages", json=anthropic_body, headers=ANTHROPIC_AUTH).json()
    # then
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert again["prompt_tokens_details"]["cached_tokens"] == 20
    assert claude["usage"]["cache_read_input_tokens"] == 20
    assert claude["usage"]["input_tokens"] == 1  # Anthropic excludes cache reads


def test_ttft_and_tokens_per_s_pace_the_stream():
    # given
    flags = {"ttft_ms": 150, "tokens_per_s": 50, "reply_tokens": 6, "latency_ms": 0}
    with running_fake_upstream(**flags) as fake, httpx.Client(base_url=fake.root_url) as http:
        started = time.monotonic()
        arrivals = []
        # when
        body = chat_body(stream=True)
        with http.stream("POST", CHAT, json=body, headers=OPENAI_AUTH) as response:
            head_s = time.monotonic() - started
            for line in response.iter_lines():
                if line.startswith("data: "):
                    arrivals.append(time.monotonic() - started)
    # then
    assert head_s < 0.1  # the response head is not delayed by ttft
    assert arrivals[0] >= 0.15  # first token after ttft
    assert arrivals[-1] - arrivals[0] >= 5 / 50 - 0.01  # 5 more tokens at 50 tokens/s


def test_slow_profile_delays_non_stream_replies():
    # given
    with running_fake_upstream("slow") as fake:
        started = time.monotonic()
        # when
        response = httpx.post(f"{fake.base_url}/chat/completions", json=chat_body(),
                              headers=OPENAI_AUTH)  # fmt: skip
        elapsed_s = time.monotonic() - started
    # then
    assert response.status_code == 200
    assert 0.3 <= elapsed_s < 1.0
