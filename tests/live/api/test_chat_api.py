"""Chat completions through a live gateway with the official OpenAI SDK (SPEC R-API-1..6)."""

from __future__ import annotations

import time

import httpx
import orjson
import pytest

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "Say hello"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}


def test_r_api_4_5_6_non_streaming_completion_with_headers_and_switchyard_block(client, fresh_live):
    # when
    raw = client.chat.completions.with_raw_response.create(
        model="llama-3.3-70b-versatile", messages=MESSAGES
    )
    completion = raw.parse()
    # then: R-API-6, the model that answered, in its canonical id
    assert completion.model == "meta/llama-3.3-70b"
    assert "fake reply from cheap" in completion.choices[0].message.content
    assert completion.usage.completion_tokens == 20
    # R-API-4: request id, trace id, and the attempts list
    assert raw.headers["x-request-id"]
    trace_id = raw.headers["x-switchyard-trace-id"]
    attempts = orjson.loads(raw.headers["x-switchyard-attempts"])
    assert [(a["provider"], a["endpoint"], a["status"], a["http_status"]) for a in attempts] == [
        ("cheap", "cheap-llama", "ok", 200)
    ]
    # R-API-5: the switchyard block
    block = completion.model_extra["switchyard"]
    assert block["trace_id"] == trace_id
    assert block["model"] == "meta/llama-3.3-70b"
    assert block["model_version"] == "3.3"
    assert (block["provider"], block["endpoint"], block["region"]) == (
        "cheap", "cheap-llama", "us-east-1"
    )  # fmt: skip
    assert block["sovereignty_class"] == "any"
    assert block["retention"] == "30d"
    assert block["cost_estimate_usd"] == pytest.approx(
        (completion.usage.prompt_tokens * 0.5 + 20 * 0.5) / 1e6
    )
    assert "meta/llama-3.3-70b" in block["routing_reason"]
    # the upstream got the endpoint's own model id and the managed credential
    last = fresh_live.fakes["cheap"].stats()["last_request"]
    assert last["body"]["model"] == "llama-up"
    assert "upstream-secret-key" not in orjson.dumps(last).decode()


def test_r_api_2_r_api_5_streaming_arrives_chunk_by_chunk_with_final_switchyard_block(client):
    # when
    started = time.perf_counter()
    arrivals: list[float] = []
    chunks = []
    for chunk in client.chat.completions.create(model="acme/paced", messages=MESSAGES, stream=True):
        arrivals.append(time.perf_counter() - started)
        chunks.append(chunk)
    # then: 20 tokens at 40 tokens/s reach the client over ~0.5 s, not all at the end
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "fake reply from paced" in text
    assert arrivals[0] < 0.25
    assert arrivals[-1] - arrivals[0] > 0.3
    assert all(c.model == "acme/paced" for c in chunks)
    block = chunks[-1].model_extra["switchyard"]
    assert block["endpoint"] == "paced-ep"
    assert block["cost_estimate_usd"] > 0


def test_tool_calls_non_stream_and_stream(client):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    # non-stream
    completion = client.chat.completions.create(
        model="meta/llama-3.3-70b", messages=messages, tools=[WEATHER_TOOL]
    )
    call = completion.choices[0].message.tool_calls[0]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert (call.function.name, orjson.loads(call.function.arguments)) == (
        "get_weather", {"location": "Paris"}
    )  # fmt: skip
    # stream: the arguments arrive in fragments and reassemble
    name, arguments = "", ""
    for chunk in client.chat.completions.create(
        model="meta/llama-3.3-70b", messages=messages, tools=[WEATHER_TOOL], stream=True
    ):
        for delta_call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            name += delta_call.function.name or ""
            arguments += delta_call.function.arguments or ""
    assert (name, orjson.loads(arguments)) == ("get_weather", {"location": "Paris"})


def test_anthropic_upstream_translated_both_ways(client, fresh_live):
    # non-stream, with a system prompt and a tool call
    completion = client.chat.completions.create(
        model="anthropic/claude-sonnet-4",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "weather in Paris?"},
        ],  # fmt: skip
        tools=[WEATHER_TOOL],
    )
    assert completion.model == "anthropic/claude-sonnet-4"
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    sent = fresh_live.fakes["anthro"].stats()["last_request"]
    assert sent["path"] == "/v1/messages"
    assert sent["body"]["system"] == "Be brief."
    assert sent["body"]["tools"][0]["input_schema"]["type"] == "object"
    # stream of text
    chunks = list(
        client.chat.completions.create(
            model="anthropic/claude-sonnet-4", messages=MESSAGES, stream=True, max_tokens=5
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("This is a fake")
    assert chunks[-1].model_extra["switchyard"]["provider"] == "anthro"


def test_r_api_3_errors_are_openai_shaped_with_request_id(fresh_live):
    url = f"{fresh_live.base_url}/chat/completions"
    good = {"Authorization": f"Bearer {fresh_live.keys['acme']}"}
    cases = [
        ({}, b'{"model": "x"}', 401, "invalid_api_key", None),
        ({"Authorization": "Bearer sk-sy-nope"}, b"{}", 401, "invalid_api_key", None),
        (good, b"{not json", 400, "invalid_json", None),
        (good, b"[1, 2]", 400, "invalid_json", None),
        (good, b'{"model": "meta/llama-3.3-70b"}', 400, "invalid_request", "messages"),
        (good, b'{"messages": [{"role": "user", "content": "x"}]}', 400, "invalid_request",
         "model"),
        (good, b'{"model": "nope/nope", "messages": [{"role": "user", "content": "x"}]}', 404,
         "model_not_found", "model"),
        (good, b'{"model": "meta/llama-3.3-70b", "messages": [{"role": "wizard"}]}', 400,
         "invalid_request", "messages[0].role"),
        (good, b'{"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "'
         + b"x" * 250_000 + b'"}]}', 413, "payload_too_large", None),
    ]  # fmt: skip
    for headers, body, status, code, param in cases:
        response = httpx.post(url, headers=headers, content=body, timeout=10)
        assert response.status_code == status, (code, response.text)
        error = response.json()["error"]
        assert (error["code"], error["param"]) == (code, param)
        assert error["message"]
        assert error["type"]
        assert response.headers["x-request-id"]
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_d_3_keys_are_never_accepted_in_the_query_string(fresh_live):
    response = httpx.post(
        f"{fresh_live.base_url}/chat/completions?api_key={fresh_live.keys['acme']}",
        json={"model": "meta/llama-3.3-70b", "messages": MESSAGES},
    )
    assert response.status_code == 401


def test_d_10_client_request_id_is_kept_when_sane(fresh_live):
    headers = {"Authorization": f"Bearer {fresh_live.keys['acme']}", "X-Request-Id": "abc-123"}
    response = httpx.get(f"{fresh_live.base_url}/models", headers=headers)
    assert response.headers["x-request-id"] == "abc-123"
    headers["X-Request-Id"] = "bad id with spaces"
    response = httpx.get(f"{fresh_live.base_url}/models", headers=headers)
    assert response.headers["x-request-id"] != "bad id with spaces"


def test_r_exe_8_client_disconnect_cancels_the_stream_and_is_traced(fresh_live):
    # given a slow stream (20 tokens at 40 tokens/s)
    headers = {"Authorization": f"Bearer {fresh_live.keys['acme']}"}
    body = {"model": "acme/paced", "messages": MESSAGES, "stream": True}
    with httpx.stream(
        "POST", f"{fresh_live.base_url}/chat/completions", headers=headers, json=body
    ) as response:
        trace_id = response.headers["x-switchyard-trace-id"]
        # when the client goes away after the first chunk
        next(response.iter_raw())
    # then the gateway stops relaying and records the interruption in the trace
    trace = fresh_live.stored_trace(trace_id, fresh_live.keys["acme"])
    assert trace["error_code"] == "stream_interrupted"
    assert trace["latency_ms"] < 450  # it did not wait for the rest of the stream


def test_d_12_logs_hold_no_secrets_or_content(client, fresh_live):
    # given requests with content, a key and an upstream credential
    client.chat.completions.create(model="meta/llama-3.3-70b", messages=MESSAGES)
    httpx.post(
        f"{fresh_live.base_url}/chat/completions?api_key=sk-sy-in-a-query-string",
        json={"model": "meta/llama-3.3-70b", "messages": MESSAGES},
    )
    # then nothing secret or content-bearing reached the gateway's log
    log = fresh_live.log_path.read_text()
    assert "configuration snapshot loaded" in log  # the log is the gateway's real one
    for secret in [*fresh_live.keys.values(), "upstream-secret-key", "sk-sy-in-a-query-string",
                   "Say hello", "fake reply"]:  # fmt: skip
        assert secret not in log


@pytest.mark.parametrize("model", ["meta/llama-3.3-70b", "anthropic/claude-sonnet-4"])
def test_every_chunk_of_a_stream_has_one_id_the_switchyard_chunk_included(client, model):
    chunks = list(client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], stream=True
    ))  # fmt: skip
    assert "switchyard" in chunks[-1].model_extra
    assert len({c.id for c in chunks}) == 1
    assert len({c.created for c in chunks}) == 1
