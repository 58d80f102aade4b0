"""The fake's `POST /v1/messages/count_tokens` (Anthropic's token count): its body held to
what Anthropic's count endpoint takes (fakeupstream/strict/), its count the one a
message's usage reports, and the fault script and credentials as on `/v1/messages`."""

from __future__ import annotations

from typing import Any

import pytest

from fakeupstream.delivery import BadRequest
from fakeupstream.strict import check_count_tokens
from tests.fakeupstream.conftest import ANTHROPIC_AUTH

COUNT = "/v1/messages/count_tokens"
USER_HI = {"role": "user", "content": "hi"}
WEATHER = {"name": "get_weather", "input_schema": {"type": "object"}}
MISSING = object()  # a field left out of the body


def count_body(**extra: Any) -> dict[str, Any]:
    body = {"model": "claude-test", "messages": [USER_HI], **extra}
    return {key: value for key, value in body.items() if value is not MISSING}


def refusal_of(body: dict[str, Any]) -> str:
    with pytest.raises(BadRequest) as caught:
        check_count_tokens(body)
    return str(caught.value)


@pytest.mark.parametrize(
    ("_case", "extra", "message"),
    [
        ("max_tokens", {"max_tokens": 16}, "max_tokens: Extra inputs are not permitted"),
        ("stream", {"stream": False}, "stream: Extra inputs are not permitted"),
        ("temperature", {"temperature": 0.5}, "temperature: Extra inputs are not permitted"),
        ("a Switchyard field", {"models": ["a/b"]}, "models: Extra inputs are not permitted"),
        ("no model", {"model": MISSING}, "model: Field required"),
        ("no messages", {"messages": MISSING}, "messages: Field required"),
        ("an assistant first", {"messages": [{"role": "assistant", "content": "hi"}]},
         'messages: first message must use the "user" role'),
        ("a system of a wrong type", {"system": 5}, "system: Input should be a valid string"),
        ("a thinking budget below the minimum",
         {"thinking": {"type": "enabled", "budget_tokens": 100}},
         "thinking.budget_tokens: Input should be greater than or equal to 1024"),
        ("a forced tool it lacks", {"tools": [WEATHER],
                                    "tool_choice": {"type": "tool", "name": "other"}},
         "tool_choice.name: Tool 'other' not found in provided tools"),
    ],
)  # fmt: skip
def test_count_bodies_the_api_refuses_are_refused_naming_the_field(_case, extra, message):
    # when
    refusal = refusal_of(count_body(**extra))
    # then
    assert refusal.startswith(message)


def test_a_full_count_body_passes_with_thinking_and_no_max_tokens():
    # given what Claude Code counts: system blocks, tools, thinking (whose budget has no
    # max_tokens to stay below here) and its beta fields
    body = count_body(
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        tools=[WEATHER],
        tool_choice={"type": "auto"},
        thinking={"type": "enabled", "budget_tokens": 4096},
        context_management={"edits": [{"type": "clear_thinking_20251015"}]},
        output_config={"effort": "high"},
        mcp_servers=[],
    )
    # when / then: no error
    check_count_tokens(body)


def test_the_count_is_a_messages_usage_input_tokens(client):
    # given
    system, text = "You are terse.", "How many tokens is this prompt, please?"
    messages = [{"role": "user", "content": text}]
    # when
    body = count_body(system=system, messages=messages)
    counted = client.post(COUNT, json=body, headers=ANTHROPIC_AUTH)
    answered = client.post("/v1/messages", json={**body, "max_tokens": 4}, headers=ANTHROPIC_AUTH)
    # then
    assert counted.status_code == 200
    assert counted.json() == {"input_tokens": (len(system) + len(text)) // 4}
    assert counted.json()["input_tokens"] == answered.json()["usage"]["input_tokens"]


def test_a_refused_count_is_an_anthropic_400_that_uses_no_fault(fake, client):
    # given
    fake.set_faults(["status:503"])
    # when
    refused = client.post(COUNT, json=count_body(max_tokens=16), headers=ANTHROPIC_AUTH)
    then_good = client.post(COUNT, json=count_body(), headers=ANTHROPIC_AUTH)
    # then
    assert refused.status_code == 400
    assert refused.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "max_tokens: Extra inputs are not permitted",
        },
    }
    assert then_good.status_code == 503  # the script entry was left for this one
    assert then_good.json()["type"] == "error"  # in Anthropic's envelope


@pytest.mark.parametrize(
    ("fault", "status"), [("status:429", 429), ("status:400", 400), ("malformed", 200)]
)
def test_the_fault_script_applies_to_counts(fake, client, fault, status):
    # given
    fake.set_faults([fault])
    # when
    response = client.post(COUNT, json=count_body(), headers=ANTHROPIC_AUTH)
    # then
    assert response.status_code == status
    assert "input_tokens" not in response.text
    assert fake.stats()["by_path"] == {COUNT: 1}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"anthropic-version": "2023-06-01"}, 401),
        ({"x-api-key": "sk-ant-test"}, 400),  # no anthropic-version
    ],
)
def test_a_count_needs_anthropics_credentials(client, headers, status):
    # when
    response = client.post(COUNT, json=count_body(), headers=headers)
    # then
    assert response.status_code == status
    assert response.json()["type"] == "error"
