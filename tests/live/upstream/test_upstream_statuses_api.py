"""What the client gets when upstreams fail (SPEC D-18), through a live gateway: request
faults passed through with their status and never failed over, in-band errors counted as
the status they name, 502/503/504 for the gateway's own verdicts, `x-should-retry` and
`Retry-After` only where they are true."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest

from tests.waiting import wait_for

pytestmark = pytest.mark.live

MODEL = "meta/llama-3.3-70b"  # endpoints cheap (tried first: routing_mode price), pricey
MESSAGES = [{"role": "user", "content": "Say hello"}]


def _post(live, *, stream: bool = False) -> httpx.Response:
    body = {"model": MODEL, "messages": MESSAGES, "stream": stream}
    headers = {"Authorization": f"Bearer {live.keys['acme']}"}
    return httpx.post(f"{live.base_url}/chat/completions", json=body, headers=headers)


def _tried(response: Any) -> list[tuple[str, int | None]]:
    attempts = orjson.loads(response.headers["x-switchyard-attempts"])
    return [(a["provider"], a["http_status"]) for a in attempts]


@pytest.mark.parametrize("status", [400, 404, 413, 422])
@pytest.mark.parametrize("stream", [False, True])
def test_d_18_a_request_fault_is_passed_through_with_its_status_and_not_failed_over(
    fresh_live, status, stream
):
    # given the first endpoint rejects the request
    fresh_live.fakes["cheap"].set_faults([f"status:{status}"])
    # when
    response = _post(fresh_live, stream=stream)
    # then the client gets that status, the next endpoint was never asked
    assert response.status_code == status
    assert response.json()["error"]["code"] == "upstream_rejected_request"
    assert _tried(response) == [("cheap", status)]
    assert fresh_live.fakes["pricey"].stats()["requests"] == 0
    assert response.headers["x-should-retry"] == "false"


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [("malformed", 502, "upstream_error"), ("status:302", 502, "upstream_error"),
     ("status:500", 502, "upstream_error"), ("status:429", 503, "upstream_unavailable"),
     ("status:529", 503, "upstream_unavailable")],
)  # fmt: skip
def test_d_18_status_when_every_endpoint_fails(fresh_live, fault, status, code):
    # given both endpoints fail the same way
    for name in ("cheap", "pricey"):
        fresh_live.fakes[name].set_faults([fault])
    # when
    response = _post(fresh_live)
    # then
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert [p for p, _s in _tried(response)] == ["cheap", "pricey"]
    if status == 503:
        assert response.headers["retry-after"].isdigit()
    else:
        assert "retry-after" not in response.headers


def test_d_18_a_400_error_frame_before_content_is_a_real_400_without_failover(fresh_live):
    # given the first endpoint answers 200 and then an in-band "maximum context length" error
    fresh_live.fakes["cheap"].set_faults(["error_event:400"])
    # when a stream is asked for
    response = _post(fresh_live, stream=True)
    # then it is an HTTP 400 before any stream began, and nobody else was tried
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert "maximum context length" in response.json()["error"]["message"]
    assert _tried(response) == [("cheap", 400)]
    assert fresh_live.fakes["pricey"].stats()["requests"] == 0


def test_d_18_a_200_whose_body_is_an_error_is_not_a_success(fresh_live):
    # given the first endpoint answers 200 with `{"error": {... server_error ...}}`
    fresh_live.fakes["cheap"].set_faults(["error_event"])
    # when
    response = _post(fresh_live)
    # then it counted as the 500 it names and failed over
    assert response.status_code == 200
    assert response.json()["switchyard"]["provider"] == "pricey"
    assert _tried(response) == [("cheap", 500), ("pricey", 200)]


def test_d_18_a_200_error_body_naming_a_client_fault_is_passed_through(fresh_live):
    fresh_live.fakes["cheap"].set_faults(["error_event:400"])
    response = _post(fresh_live)
    assert response.status_code == 400
    assert _tried(response) == [("cheap", 400)]


def test_d_18_every_endpoint_refusing_gets_our_own_retry_after(fresh_live):
    # given both endpoints are down (connections refused by a 503 from the fake's switch)
    for name in ("cheap", "pricey"):
        fresh_live.fakes[name].set_faults(down=True)
    # when
    response = _post(fresh_live)
    # then a 503 that says when to come back, in whole seconds
    assert response.status_code == 503
    assert int(response.headers["retry-after"]) >= 1
    assert "x-should-retry" not in response.headers


@pytest.mark.parametrize("stream", [False, True])
def test_r_api_5_the_reason_names_the_provider_that_served_after_a_failover(
    client, fresh_live, stream
):
    # given the first endpoint fails once
    fresh_live.fakes["cheap"].set_faults(["status:503"])
    # when
    reply = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=stream)
    block = list(reply)[-1].model_extra["switchyard"] if stream else reply.model_extra["switchyard"]
    # then the sentence and the block agree on who answered
    assert block["provider"] == "pricey"
    assert " at pricey;" in block["routing_reason"]
    assert "cheap" not in block["routing_reason"]


# A malformed answer (SPEC D-18): a 200 without its answer, a body cut short, and a stream
# whose head arrived and which closed before any content.
MALFORMED = [("no_answer", False), ("no_answer", True), ("drop_mid_stream:0", False),
             ("drop_mid_stream:0", True)]  # fmt: skip


def _chat(client: openai.OpenAI, model: str, stream: bool) -> Any:
    """The raw reply, its stream read to the end."""
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=MESSAGES, stream=stream
    )
    reply = raw.parse()
    block = list(reply)[-1].model_extra if stream else reply.model_extra
    return raw, block["switchyard"]


@pytest.mark.parametrize(("fault", "stream"), MALFORMED)
def test_d_18_a_malformed_answer_fails_over_to_the_next_endpoint(client, fresh_live, fault, stream):
    # given the first endpoint answers malformed once
    fresh_live.fakes["cheap"].set_faults([fault])
    # when
    raw, block = _chat(client, MODEL, stream)
    # then it was a failed attempt, and the next endpoint answered
    assert block["provider"] == "pricey"
    tried = _tried(raw)
    assert [p for p, _s in tried] == ["cheap", "pricey"]
    assert tried[-1] == ("pricey", 200)
    assert orjson.loads(raw.headers["x-switchyard-attempts"])[0]["status"] == "error"


@pytest.mark.parametrize(("fault", "stream"), MALFORMED)
def test_d_18_every_endpoint_malformed_is_a_502_upstream_error(client, fresh_live, fault, stream):
    # given both endpoints answer malformed
    for name in ("cheap", "pricey"):
        fresh_live.fakes[name].set_faults([fault])
    # when
    with pytest.raises(openai.APIStatusError) as caught:
        _chat(client, MODEL, stream)
    # then
    assert (caught.value.status_code, caught.value.body["code"]) == (502, "upstream_error")
    assert [p for p, _s in _tried(caught.value.response)] == ["cheap", "pricey"]
    assert "retry-after" not in caught.value.response.headers


@pytest.mark.parametrize(
    "call",
    [pytest.param(lambda c: _chat(c, "anthropic/claude-sonnet-4", False), id="anthropic-chat"),
     pytest.param(lambda c: _chat(c, "anthropic/claude-sonnet-4", True), id="anthropic-stream"),
     pytest.param(lambda c: c.embeddings.create(model="openai/text-embedding-3-small",
                                                input="hi"), id="embeddings"),
     pytest.param(lambda c: c.responses.create(model=MODEL, input="hi"), id="responses")],
)  # fmt: skip
def test_d_18_an_answer_without_its_answer_is_a_502_on_every_api(client, fresh_live, call):
    # given every upstream answers 200 with the right kind of JSON, minus the answer
    for fake in fresh_live.fakes.values():
        fake.set_faults([{"fault": "no_answer", "times": None}])
    # when
    with pytest.raises(openai.APIStatusError) as caught:
        call(client)
    # then
    assert (caught.value.status_code, caught.value.body["code"]) == (502, "upstream_error")


@pytest.mark.parametrize("stream", [False, True])
def test_d_18_a_native_message_without_content_is_a_502(fresh_live, stream):
    # given the Anthropic upstream answers a message without content (or a stream of none)
    fresh_live.fakes["anthro"].set_faults([{"fault": "no_answer", "times": None}])
    sdk = anthropic.Anthropic(base_url=fresh_live.gateway.url, api_key=fresh_live.keys["acme"],
                              max_retries=0, timeout=20)  # fmt: skip
    # when
    with pytest.raises(anthropic.APIStatusError) as caught:
        sdk.messages.create(model="anthropic/claude-sonnet-4", max_tokens=16,
                            messages=MESSAGES, stream=stream)  # fmt: skip
    # then
    assert caught.value.status_code == 502


@pytest.fixture(scope="module")
def shape_model(live, tmp_path_factory) -> str:
    """A model of this module's own, cheap then pricey, whose endpoints no other test calls."""
    model = "d18/shape"
    config = tmp_path_factory.mktemp("d18") / "shape.yaml"
    config.write_text(f"""
models:
  - {{slug: {model}, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: d18-shape-cheap, provider: cheap, model: {model}, upstream_model: shape, region: r,
      price: {{input: 0.1, output: 0.1}}}}
  - {{id: d18-shape-pricey, provider: pricey, model: {model}, upstream_model: shape, region: r,
      price: {{input: 0.2, output: 0.2}}}}
""")  # fmt: skip
    live.manage("apply", "-f", str(config))
    sdk = openai.OpenAI(base_url=live.base_url, api_key=live.keys["acme"], max_retries=0)
    live.wait_for_model(sdk, model)
    return model


def _reliability(live) -> dict[str, tuple[int, float | None]]:
    """`/health`'s (requests, error rate) of each endpoint of `shape_model`."""
    providers = httpx.get(f"{live.gateway.url}/health", timeout=5).json()["providers"]
    return {endpoint: (shown["requests"], shown["error_rate"])
            for provider in providers.values()
            for endpoint, shown in provider.get("endpoints", {}).items()
            if endpoint.startswith("d18-shape-")}  # fmt: skip


def test_r_exe_4_a_malformed_answer_counts_against_the_endpoints_reliability(
    client, fresh_live, shape_model
):
    # given the first endpoint answers without choices
    fresh_live.fakes["cheap"].set_faults(["no_answer"])
    # when
    _raw, block = _chat(client, shape_model, stream=False)
    assert block["endpoint"] == "d18-shape-pricey"
    # then that endpoint's one attempt is a failure, the one that served is not blamed
    wanted = {"d18-shape-cheap": (1, 1.0), "d18-shape-pricey": (1, 0.0)}
    wait_for(lambda: _reliability(fresh_live) == wanted, f"/health to show {wanted}", 10)
