"""Models, embeddings, responses, traces and policies through a live gateway
(SPEC R-API-1, R-API-7, R-DEC-3, D-7)."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.waiting import wait_for

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "Say hello"}]


def _client(live, workspace: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=live.base_url, api_key=live.keys[workspace], max_retries=0)


def test_d_7_models_lists_what_the_key_may_use(fresh_live):
    listed = {m.id for m in _client(fresh_live, "acme").models.list()}
    assert {"meta/llama-3.3-70b", "anthropic/claude-sonnet-4", "acme/tiny"} <= listed
    # the EU-owned-only policy leaves nothing in this catalog
    assert [m.id for m in _client(fresh_live, "euonly").models.list()] == []


def test_r_dec_3_r_bey_6_nothing_survives_the_policy_is_a_409_listing_each_exclusion(
    fresh_live,
):
    client = _client(fresh_live, "euonly")
    for _ in range(2):  # the same request fails the same way again
        with pytest.raises(openai.ConflictError) as caught:
            client.chat.completions.create(model="meta/llama-3.3-70b", messages=MESSAGES)
        body = caught.value.body
        assert body["code"] == "no_endpoint_for_policy"
        assert body["message"].endswith("Residency is never relaxed silently.")
        assert {(x["endpoint"], x["reason"]) for x in body["excluded"]} == {
            ("cheap-llama", "sovereignty_not_allowed"),
            ("pricey-llama", "sovereignty_not_allowed"),
        }
        assert caught.value.response.headers["x-switchyard-attempts"] == "[]"
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_d_16_a_request_too_large_for_every_window_is_openais_context_length_exceeded(
    fresh_live,
):
    # given a model whose only endpoint has a 64-token window
    # when a request does not fit it
    with pytest.raises(openai.BadRequestError) as caught:
        _client(fresh_live, "acme").chat.completions.create(
            model="acme/tiny", messages=[{"role": "user", "content": "word " * 100}]
        )
    # then it is OpenAI's 400, naming the estimate and the largest window, not the 409
    error = caught.value.body
    assert (error["code"], error["param"]) == ("context_length_exceeded", "messages")
    assert "(64 tokens)" in error["message"]
    assert "Residency" not in error["message"]
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


@pytest.fixture(scope="module")
def small_windows(live, tmp_path_factory) -> tuple[str, str]:
    """Two models of their own on the `cheap` fake: a 64-token and a 128-token window."""
    small, larger = "d16/window-64", "d16/window-128"
    config = tmp_path_factory.mktemp("d16") / "windows.yaml"
    config.write_text(f"""
models:
  - {{slug: {small}, capabilities: [text], context_window: 64}}
  - {{slug: {larger}, capabilities: [text], context_window: 128}}
endpoints:
  - {{id: d16-window-64, provider: cheap, model: {small}, upstream_model: w64, region: r,
      price: {{input: 0.1, output: 0.1}}}}
  - {{id: d16-window-128, provider: cheap, model: {larger}, upstream_model: w128, region: r,
      price: {{input: 0.1, output: 0.1}}}}
""")  # fmt: skip
    live.manage("apply", "-f", str(config))
    live.wait_for_model(_client(live, "acme"), larger)
    return small, larger


def test_d_16_a_fallback_chain_too_small_everywhere_names_the_largest_window_on_offer(
    fresh_live, small_windows
):
    # given a chain of a 128-token model, then a 64-token one
    small, larger = small_windows
    # when a request fits neither
    with pytest.raises(openai.BadRequestError) as caught:
        _client(fresh_live, "acme").chat.completions.create(
            model=larger, messages=[{"role": "user", "content": "word " * 200}],
            extra_body={"models": [small]},
        )  # fmt: skip
    # then the 400 names the largest window of the whole chain, not the first model's
    error = caught.value.body
    assert (error["code"], error["param"]) == ("context_length_exceeded", "messages")
    assert "(128 tokens)" in error["message"]
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())


def test_d_16_another_exclusion_beside_the_window_keeps_the_409(fresh_live):
    # given a residency the endpoint does not meet, and a request too long for it
    with pytest.raises(openai.ConflictError) as caught:
        _client(fresh_live, "euonly").chat.completions.create(
            model="acme/tiny", messages=[{"role": "user", "content": "word " * 100}]
        )
    # then the residency refusal stands
    assert caught.value.body["code"] == "no_endpoint_for_policy"


def test_r_api_1_embeddings_route_only_to_embedding_endpoints(fresh_live):
    client = _client(fresh_live, "acme")
    result = client.embeddings.create(model="openai/text-embedding-3-small", input=["a", "b"])
    assert len(result.data) == 2
    assert len(result.data[0].embedding) == 8
    with pytest.raises(openai.ConflictError) as caught:
        client.embeddings.create(model="meta/llama-3.3-70b", input="a")
    assert {x["reason"] for x in caught.value.body["excluded"]} == {"cannot_embed"}


def test_r_api_1_responses_input_form(fresh_live):
    response = _client(fresh_live, "acme").responses.create(
        model="meta/llama-3.3-70b", input="Say hello", instructions="Be brief."
    )
    assert "fake reply from cheap" in response.output_text
    assert response.model == "meta/llama-3.3-70b"
    assert response.usage.output_tokens == 20
    sent = fresh_live.fakes["cheap"].stats()["last_request"]["body"]
    assert sent["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Say hello"}]  # fmt: skip


def test_r_api_7_trace_is_scoped_to_the_callers_workspace(fresh_live):
    # given a request in workspace acme
    raw = _client(fresh_live, "acme").chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES
    )
    trace_id = raw.headers["x-switchyard-trace-id"]
    url = f"{fresh_live.base_url}/traces/{trace_id}"
    # when acme asks for it
    mine = httpx.get(url, headers={"Authorization": f"Bearer {fresh_live.keys['acme']}"})
    # then it gets the decision and attempts, and no content
    assert mine.status_code == 200
    trace = mine.json()
    assert (trace["model"], trace["provider"], trace["status_code"]) == (
        "meta/llama-3.3-70b", "cheap", 200
    )  # fmt: skip
    assert trace["decision"]["decisions"][0]["ordered"] == ["cheap-llama", "pricey-llama"]
    assert trace["decision"]["request"]["model"] == "meta/llama-3.3-70b"
    assert trace["attempts"][0]["status"] == "ok"
    assert "Say hello" not in mine.text
    assert "fake reply" not in mine.text
    # and another workspace gets a 404, not a 403
    theirs = httpx.get(url, headers={"Authorization": f"Bearer {fresh_live.keys['other']}"})
    assert theirs.status_code == 404
    assert theirs.json()["error"]["code"] == "trace_not_found"


def test_d_3_revoked_key_is_refused_after_the_snapshot_reloads(fresh_live):
    # given a new key that works
    key = fresh_live.manage("createkey", "--workspace", "acme", "--name", "temp").strip()
    client = openai.OpenAI(base_url=fresh_live.base_url, api_key=key, max_retries=0)
    fresh_live.wait_for_key(key)  # the gateway picks the new key up within one snapshot poll
    # when it is revoked
    fresh_live.manage("revokekey", key[:18])
    # then it is refused with the same body as an unknown key
    wait_for(lambda: not _accepted(client), "the revoked key to be refused", 5)
    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert refused.value.code == "invalid_api_key"


def _accepted(client: openai.OpenAI) -> bool:
    try:
        client.models.list()
    except openai.AuthenticationError:
        return False
    return True


def test_r_api_1_responses_stream_events(fresh_live):
    client = _client(fresh_live, "acme")
    events = list(
        client.responses.create(model="meta/llama-3.3-70b", input="Say hello", stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert "fake reply from cheap" in deltas
    final = events[-1].response
    assert final.output_text == deltas
    assert final.usage.output_tokens == 20
    assert final.model_extra["switchyard"]["provider"] == "cheap"
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
