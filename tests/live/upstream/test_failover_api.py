"""Failover through a live gateway with injected upstream faults (SPEC R-EXE-1 as far as
the foundation goes: retryable failures move to the next endpoint of the filtered list,
client errors do not, nothing is retried once a stream has started)."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "Say hello"}]


def _attempts(raw) -> list[tuple[str, str, int | None]]:
    return [(a["provider"], a["status"], a["http_status"])
            for a in orjson.loads(raw.headers["x-switchyard-attempts"])]  # fmt: skip


@pytest.mark.parametrize(
    ("fault", "http_status"),
    [("status:503", 503), ("status:429", 429), ("status:500", 500), ("disconnect", None),
     ("malformed", None)],
)  # fmt: skip
def test_r_exe_1_retryable_failure_fails_over_to_the_next_endpoint(
    client, fresh_live, fault, http_status
):
    # given the cheapest endpoint fails once
    fresh_live.fakes["cheap"].set_faults([fault])
    # when
    raw = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES
    )
    # then the next endpoint answered and the header lists both attempts
    assert raw.parse().model_extra["switchyard"]["provider"] == "pricey"
    assert _attempts(raw) == [("cheap", "error", http_status), ("pricey", "ok", 200)]


def test_r_exe_1_first_byte_timeout_fails_over(client, fresh_live):
    fresh_live.fakes["cheap"].set_faults(["hang"])
    raw = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES, stream=True
    )
    chunks = list(raw.parse())
    assert chunks[-1].model_extra["switchyard"]["provider"] == "pricey"
    assert _attempts(raw) == [("cheap", "error", None), ("pricey", "ok", 200)]


def test_r_exe_1_in_band_stream_error_before_content_fails_over(client, fresh_live):
    fresh_live.fakes["cheap"].set_faults(["error_event"])
    raw = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES, stream=True
    )
    chunks = list(raw.parse())
    assert chunks[-1].model_extra["switchyard"]["provider"] == "pricey"
    assert _attempts(raw)[0][:2] == ("cheap", "error")


def test_r_exe_1_killed_provider_fails_over_with_200s(client, fresh_live):
    # given the preferred provider is down for every request
    fresh_live.fakes["cheap"].set_faults(down=True)
    # when several requests are made
    for _ in range(3):
        raw = client.chat.completions.with_raw_response.create(
            model="meta/llama-3.3-70b", messages=MESSAGES
        )
        # then each succeeds on the other endpoint and says so
        assert raw.http_response.status_code == 200
        assert _attempts(raw) == [("cheap", "error", 503), ("pricey", "ok", 200)]


def test_r_exe_1_client_error_from_upstream_is_not_retried(client, fresh_live):
    fresh_live.fakes["cheap"].set_faults(["status:400"])
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="meta/llama-3.3-70b", messages=MESSAGES)
    assert caught.value.code == "upstream_rejected_request"
    assert fresh_live.fakes["pricey"].stats()["requests"] == 0


def test_r_exe_1_all_attempts_failing_is_a_503_listing_them(client, fresh_live):
    fresh_live.fakes["cheap"].set_faults(down=True)
    fresh_live.fakes["pricey"].set_faults(down=True)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="meta/llama-3.3-70b", messages=MESSAGES)
    assert caught.value.status_code == 503
    body = caught.value.body
    assert body["code"] == "upstream_unavailable"
    assert [a["provider"] for a in body["attempts"]] == ["cheap", "pricey"]
    assert caught.value.response.headers["x-switchyard-attempts"]


def test_r_exe_1_no_retry_once_stream_bytes_reached_the_client(fresh_live):
    # given the cheapest endpoint drops its stream after 3 chunks
    fresh_live.fakes["cheap"].set_faults(["drop_mid_stream:3"])
    # when
    with httpx.stream(
        "POST",
        f"{fresh_live.base_url}/chat/completions",
        headers={"Authorization": f"Bearer {fresh_live.keys['acme']}"},
        json={"model": "meta/llama-3.3-70b", "messages": MESSAGES, "stream": True},
        timeout=10,
    ) as response:
        body = response.read()
    # then the stream ends with a well-formed error event, and nobody else was asked
    assert response.status_code == 200
    events = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert b"[DONE]" not in events
    assert orjson.loads(events[-1])["error"]["code"] == "stream_interrupted"
    assert fresh_live.fakes["pricey"].stats()["requests"] == 0


def test_r_exe_1_killing_the_preferred_provider_mid_run_fails_over_with_200s(fresh_live):
    # given two new providers for a new model, applied while the gateway runs
    from fakeupstream.process import running_fake_upstream
    from tests.live.installation import UPSTREAM_KEY

    with (
        running_fake_upstream("fast", name="doomed", api_key=UPSTREAM_KEY) as doomed,
        running_fake_upstream("fast", name="backup", api_key=UPSTREAM_KEY) as backup,
        fresh_live.applied(f"""
providers:
  - {{slug: doomed, name: Doomed, base_url: "{doomed.base_url}", api_key_env: LIVE_UPSTREAM_KEY}}
  - {{slug: backup, name: Backup, base_url: "{backup.base_url}", api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: acme/mortal, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: doomed-mortal, provider: doomed, model: acme/mortal, upstream_model: m, region: r,
      price: {{input: 0.1, output: 0.1}}}}
  - {{id: backup-mortal, provider: backup, model: acme/mortal, upstream_model: m, region: r,
      price: {{input: 0.2, output: 0.2}}}}
"""),
    ):
        client = openai.OpenAI(
            base_url=fresh_live.base_url, api_key=fresh_live.keys["acme"], max_retries=0
        )
        fresh_live.wait_for_model(client, "acme/mortal")
        first = client.chat.completions.with_raw_response.create(
            model="acme/mortal", messages=MESSAGES
        )
        assert _attempts(first) == [("doomed", "ok", 200)]
        # when the preferred provider's process dies
        doomed.stop()
        # then requests keep succeeding on the other one, and say so
        for _ in range(3):
            raw = client.chat.completions.with_raw_response.create(
                model="acme/mortal", messages=MESSAGES
            )
            assert raw.http_response.status_code == 200
            assert _attempts(raw) == [("doomed", "error", None), ("backup", "ok", 200)]
