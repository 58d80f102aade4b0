"""Fault injection against a running fake: each fault kind, the fault script, `down`."""

from __future__ import annotations

import concurrent.futures
import time

import httpx
import orjson
import pytest

from tests.fakeupstream.conftest import ANTHROPIC_AUTH, OPENAI_AUTH, chat_body, sse_events
from tests.waiting import wait_for

CHAT = "/v1/chat/completions"


def faulted(fault: str) -> dict[str, str]:
    return {**OPENAI_AUTH, "X-Fake-Fault": fault}


def statuses(client: httpx.Client, count: int) -> list[int]:
    return [
        client.post(CHAT, json=chat_body(), headers=OPENAI_AUTH).status_code for _ in range(count)
    ]


def test_status_fault_answers_that_status_with_an_openai_error(client):
    # when
    response = client.post(CHAT, json=chat_body(), headers=faulted("status:503"))
    # then
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "server_error"
    assert "retry-after" not in response.headers


def test_status_429_carries_retry_after(client):
    # when
    response = client.post(CHAT, json=chat_body(), headers=faulted("status:429"))
    # then
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_hang_never_answers_and_the_server_stays_healthy(client):
    # when
    with pytest.raises(httpx.ReadTimeout):
        client.post(CHAT, json=chat_body(), headers=faulted("hang"), timeout=0.3)
    # then
    assert client.post(CHAT, json=chat_body(), headers=OPENAI_AUTH).status_code == 200


def test_hold_answers_once_released_and_not_before(fake, client):
    # given two requests held by the fault
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        hold = faulted("hold")
        held = [pool.submit(client.post, CHAT, json=chat_body(), headers=hold) for _ in "ab"]
        wait_for(lambda: fake.stats()["in_flight"] == 2, "both requests to be held", 5)
        assert not any(answer.done() for answer in held)
        # when they are released
        fake.release()
        # then both answer normally, and a later hold passes at once
        assert [answer.result().status_code for answer in held] == [200, 200]
    assert client.post(CHAT, json=chat_body(), headers=faulted("hold")).status_code == 200


def test_disconnect_closes_without_a_response(client):
    # when / then
    with pytest.raises(httpx.RemoteProtocolError):
        client.post(CHAT, json=chat_body(), headers=faulted("disconnect"))


def collect_data_lines(response: httpx.Response, into: list[str]) -> None:
    into.extend(line for line in response.iter_lines() if line.startswith("data: "))


def test_drop_mid_stream_sends_n_chunks_then_breaks_the_stream(client):
    # given
    received: list[str] = []
    body, headers = chat_body(stream=True), faulted("drop_mid_stream:3")
    # when
    with (
        client.stream("POST", CHAT, json=body, headers=headers) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        collect_data_lines(response, received)
    # then
    assert len(received) == 3
    assert "data: [DONE]" not in received


def test_drop_mid_stream_on_a_json_reply_truncates_the_body(client):
    # when / then
    with pytest.raises(httpx.RemoteProtocolError):
        client.post(CHAT, json=chat_body(), headers=faulted("drop_mid_stream:0"))


def test_malformed_json_reply_is_200_with_unparseable_bytes(client):
    # when
    response = client.post(CHAT, json=chat_body(), headers=faulted("malformed"))
    # then
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(response.content)


def test_malformed_stream_sends_a_garbage_data_line(client):
    # when
    body = chat_body(stream=True)
    with client.stream("POST", CHAT, json=body, headers=faulted("malformed")) as response:
        raw = response.read()
    # then
    assert raw.startswith(b"data: {")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw.removeprefix(b"data: ").strip())


def test_no_answer_is_a_well_formed_200_without_the_answer(client):
    # when
    chat = client.post(CHAT, json=chat_body(), headers=faulted("no_answer"))
    message_body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    message = client.post("/v1/messages", json=message_body,
                          headers={**ANTHROPIC_AUTH, "X-Fake-Fault": "no_answer"})  # fmt: skip
    embedded = client.post("/v1/embeddings", json={"model": "e", "input": "hi"},
                           headers=faulted("no_answer"))  # fmt: skip
    # then each is JSON of its kind, and the answer itself is missing
    assert (chat.status_code, chat.json()["object"]) == (200, "chat.completion")
    assert "choices" not in chat.json()
    assert (message.status_code, message.json()["type"]) == (200, "message")
    assert "content" not in message.json()
    assert (embedded.status_code, embedded.json()["object"]) == (200, "list")
    assert "data" not in embedded.json()


@pytest.mark.parametrize(
    ("path", "auth", "body"),
    [(CHAT, OPENAI_AUTH, chat_body(stream=True)),
     ("/v1/messages", ANTHROPIC_AUTH, {"model": "m", "max_tokens": 5, "stream": True,
                                       "messages": [{"role": "user", "content": "hi"}]})],
)  # fmt: skip
def test_no_answer_stream_opens_and_ends_with_no_content_between(client, path, auth, body):
    # when
    headers = {**auth, "X-Fake-Fault": "no_answer"}
    with client.stream("POST", path, json=body, headers=headers) as response:
        events = sse_events(response)
    # then an opening event without content, then the stream's regular end
    assert response.status_code == 200
    opening, end = events
    if path == CHAT:
        assert "choices" not in orjson.loads(opening[1])
        assert end[1] == "[DONE]"
    else:
        assert (opening[0], end[0]) == ("message_start", "message_stop")


def test_latency_fault_delays_the_answer(client):
    # when
    started = time.monotonic()
    response = client.post(CHAT, json=chat_body(), headers=faulted("latency:200"))
    # then
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.2


def test_error_event_stream_is_200_with_an_in_band_error_first(client):
    # when
    body = chat_body(stream=True)
    with client.stream("POST", CHAT, json=body, headers=faulted("error_event")) as response:
        events = [data for _, data in sse_events(response)]
    # then
    assert response.status_code == 200
    assert orjson.loads(events[0])["error"]["type"] == "server_error"
    assert events == events[:1]  # no content and no [DONE]


def test_error_event_on_a_json_reply_is_an_error_body_with_200(client):
    # when
    response = client.post(CHAT, json=chat_body(), headers=faulted("error_event"))
    # then
    assert response.status_code == 200
    assert response.json()["error"]["type"] == "server_error"


def test_unknown_fault_header_is_400(client):
    # when
    response = client.post(CHAT, json=chat_body(), headers=faulted("explode"))
    # then
    assert response.status_code == 400
    assert "unknown fault" in response.json()["error"]["message"]


def test_fault_script_is_applied_in_order_and_times(fake, client):
    # given
    fake.set_faults([{"fault": "status:503", "times": 2}, "status:429"])
    # when
    seen = statuses(client, 4)
    # then
    assert seen == [503, 503, 429, 200]


def test_fault_with_times_null_lasts_until_reset(fake, client):
    # given
    fake.set_faults([{"fault": "status:500", "times": None}])
    # when
    before = statuses(client, 3)
    fake.reset()
    after = statuses(client, 1)
    # then
    assert (before, after) == ([500, 500, 500], [200])


def test_fault_header_wins_and_does_not_consume_the_script(fake, client):
    # given
    fake.set_faults(["status:503"])
    # when
    headed = client.post(CHAT, json=chat_body(), headers=faulted("status:418")).status_code
    scripted = statuses(client, 2)
    # then
    assert (headed, scripted) == (418, [503, 200])


def test_refused_requests_do_not_consume_the_script(fake, client):
    # given
    fake.set_faults(["status:503"])
    # when
    unauthenticated = client.post(CHAT, json=chat_body()).status_code
    invalid = client.post(CHAT, json={"model": "m"}, headers=OPENAI_AUTH).status_code
    scripted = statuses(client, 1)
    # then
    assert (unauthenticated, invalid, scripted) == (401, 400, [503])


def test_down_answers_503_everywhere_until_reset(fake, client):
    # given
    fake.set_faults(down=True)
    # when
    chat = client.post(CHAT, json=chat_body(), headers=OPENAI_AUTH)
    models = client.get("/v1/models", headers=OPENAI_AUTH)
    health = client.get("/_fake/health")
    fake.reset()
    revived = client.post(CHAT, json=chat_body(), headers=OPENAI_AUTH)
    # then
    assert (chat.status_code, models.status_code) == (503, 503)
    assert health.text == "ok"
    assert revived.status_code == 200


@pytest.mark.parametrize(
    "script",
    [
        {"faults": [{"fault": "nope"}]},
        {"faults": [{"fault": "status:503", "times": 0}]},
        {"faults": "status:503"},
        {"faults": [], "down": "yes"},
    ],
)
def test_bad_fault_script_is_400_and_keeps_the_old_one(fake, client, script):
    # given
    fake.set_faults(["status:503"])
    # when
    response = client.post("/_fake/faults", json=script)
    # then
    assert response.status_code == 400
    assert fake.stats()["faults"]["faults"] == [{"fault": "status:503", "times": 1}]


def test_error_event_with_a_status_is_an_error_of_that_status_type(client):
    response = client.post(CHAT, json=chat_body(), headers=faulted("error_event:400"))
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "maximum context length" in error["message"]


def test_a_redirect_status_carries_a_location(client):
    response = client.post(CHAT, json=chat_body(), headers=faulted("status:302"))
    assert response.status_code == 302
    assert response.headers["location"]


def test_echo_mode_quotes_the_credential_and_the_prompt_everywhere(fake, client):
    # given a hostile provider
    fake.set_echo(True)
    # when it refuses a request, and rate-limits another
    refused = client.post(CHAT, json=chat_body("secret plan"), headers=faulted("status:401"))
    limited = client.post(CHAT, json=chat_body("secret plan"), headers=faulted("status:429"))
    # then body, header and Retry-After all carry the key, the body the prompt too
    message = refused.json()["error"]["message"]
    assert "Incorrect API key provided: sk-test" in message
    assert "secret plan" in message
    assert refused.headers["x-echo"] == "sk-test"
    assert limited.headers["retry-after"] == "sk-test"
    # and a reset ends it
    fake.reset()
    assert "sk-test" not in client.post(CHAT, json=chat_body(), headers=faulted("status:401")).text


def test_stats_count_running_and_cancelled_handlers(fake, client):
    # given a request that hangs
    with pytest.raises(httpx.ReadTimeout):
        client.post(CHAT, json=chat_body(), headers=faulted("hang"), timeout=0.3)
    # then once the client has gone, the handler was cancelled and is no longer running
    wait_for(lambda: not fake.stats()["in_flight"], "the hung handler to stop running")
    assert fake.stats()["cancelled"] == 1
