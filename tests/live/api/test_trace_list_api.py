"""`GET /v1/traces` through a live gateway (SPEC R-OBS-1, R-API-7, D-31): a key lists its
own traces, newest first, each row with its attempt chain; filters and the cursor work on
what the gateway itself recorded. Each test uses a key of its own, so no other test's
traffic can make it pass."""

from __future__ import annotations

import uuid

import httpx
import openai
import pytest

pytestmark = pytest.mark.live
MESSAGES = [{"role": "user", "content": "Say hello"}]


def _list(live, api_key: str, **params: object) -> httpx.Response:
    return httpx.get(f"{live.base_url}/traces", params=params,
                     headers={"Authorization": f"Bearer {api_key}"}, timeout=10)  # fmt: skip


def test_r_obs_1_a_key_lists_its_own_traces_newest_first_with_the_attempt_chain(fresh_live):
    key = fresh_live.new_key("acme", f"log-{uuid.uuid4().hex[:8]}")
    other = fresh_live.new_key("acme", f"log-other-{uuid.uuid4().hex[:8]}")
    client = openai.OpenAI(base_url=fresh_live.base_url, api_key=key, max_retries=0)
    first = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES, extra_headers={"X-Session-Id": "chat-42"}
    )
    second = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES, stream=True
    )
    for _chunk in second.parse():
        pass
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no/such-model", messages=MESSAGES)
    openai.OpenAI(
        base_url=fresh_live.base_url, api_key=other, max_retries=0
    ).chat.completions.create(model="meta/llama-3.3-70b", messages=MESSAGES)

    listed = _list(fresh_live, key)
    assert listed.status_code == 200, listed.text
    rows = listed.json()["data"]
    assert [row["status_code"] for row in rows] == [404, 200, 200]  # newest first, only its own
    assert rows[2]["id"] == first.headers["X-Switchyard-Trace-Id"]
    assert rows[1]["id"] == second.headers["X-Switchyard-Trace-Id"]
    assert rows[1]["stream"] is True
    assert rows[2]["session_id"] == "chat-42"
    assert rows[2]["attempts"][-1]["status"] == "ok"
    assert rows[2]["attempts"][-1]["provider"] in {"cheap", "pricey"}
    assert rows[0]["error_code"] == "model_not_found"
    assert "decision" not in rows[0]


def test_r_obs_1_filters_and_the_cursor_select_from_what_the_gateway_recorded(fresh_live):
    key = fresh_live.new_key("acme", f"log-{uuid.uuid4().hex[:8]}")
    client = openai.OpenAI(base_url=fresh_live.base_url, api_key=key, max_retries=0)
    ids = []
    for n in range(5):
        raw = client.chat.completions.with_raw_response.create(
            model="meta/llama-3.3-70b",
            messages=MESSAGES,
            extra_headers={"X-Session-Id": f"s{n % 2}"},
        )
        ids.append(raw.headers["X-Switchyard-Trace-Id"])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no/such-model", messages=MESSAGES)

    # D-31: `status` is the HTTP status code
    assert [r["status_code"] for r in _list(fresh_live, key, status=404).json()["data"]] == [404]
    in_s0 = [r["id"] for r in _list(fresh_live, key, session_id="s0").json()["data"]]
    assert in_s0 == [ids[4], ids[2], ids[0]]
    paged, cursor = [], None
    while True:
        body = _list(
            fresh_live, key, limit=2, status=200, **({"cursor": cursor} if cursor else {})
        ).json()
        paged += [r["id"] for r in body["data"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert paged == ids[::-1]
    only = _list(fresh_live, key, trace_id=ids[1]).json()["data"]
    assert [r["id"] for r in only] == [ids[1]]


def test_the_key_list_refuses_a_filter_it_does_not_have_in_the_api_error_shape(fresh_live):
    key = fresh_live.keys["acme"]
    for params, param in [
        ({"key": "x"}, "key"),
        ({"status": "ok"}, "status"),
        ({"limit": "500"}, "limit"),
    ]:
        response = _list(fresh_live, key, **params)
        assert response.status_code == 400
        assert response.json()["error"]["param"] == param
    assert _list(fresh_live, "sk-sy-nope-nope").status_code == 401
