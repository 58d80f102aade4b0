"""What the client gets when upstreams fail (SPEC D-18), through a live gateway: request
faults passed through with their status and never failed over, in-band errors counted as
the status they name, 502/503/504 for the gateway's own verdicts, `x-should-retry` and
`Retry-After` only where they are true."""

from __future__ import annotations

import httpx
import orjson
import pytest

pytestmark = pytest.mark.live

MODEL = "meta/llama-3.3-70b"  # endpoints cheap (tried first: routing_mode price), pricey
MESSAGES = [{"role": "user", "content": "Say hello"}]


def _post(live, *, stream: bool = False) -> httpx.Response:
    body = {"model": MODEL, "messages": MESSAGES, "stream": stream}
    headers = {"Authorization": f"Bearer {live.keys['acme']}"}
    return httpx.post(f"{live.base_url}/chat/completions", json=body, headers=headers)


def _tried(response: httpx.Response) -> list[tuple[str, int | None]]:
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
