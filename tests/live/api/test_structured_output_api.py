"""Structured output through a live gateway with the official OpenAI SDK: `response_format`
(json_schema and json_object) and the SDK's `parse` / `stream` helpers give the same parsed
answer whichever API style serves the model — OpenAI-style (`meta/llama-3.3-70b`) or
Anthropic-style (`anthropic/claude-sonnet-4`, a forced answer tool upstream)."""

from __future__ import annotations

import openai
import orjson
import pydantic
import pytest

pytestmark = pytest.mark.live

MODELS = ("meta/llama-3.3-70b", "anthropic/claude-sonnet-4")
MESSAGES = [{"role": "user", "content": "Who wrote the first program? Give name and age."}]


class Person(pydantic.BaseModel):
    name: str
    age: int


# What the fakes fill in for Person's schema (fakeupstream/structured.py).
FAKE_PERSON = Person(name="fake", age=1)
PERSON_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "person",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"],
            "additionalProperties": False,
        },
    },
}


def test_parse_gives_the_pydantic_object_from_either_api_style(client: openai.OpenAI):
    for model in MODELS:
        # when
        completion = client.chat.completions.parse(
            model=model, messages=MESSAGES, response_format=Person
        )
        # then
        choice = completion.choices[0]
        assert (model, choice.message.parsed) == (model, FAKE_PERSON)
        assert (model, choice.finish_reason, choice.message.tool_calls) == (model, "stop", None)


def test_streamed_parse_gives_the_pydantic_object_from_either_api_style(client: openai.OpenAI):
    for model in MODELS:
        # when
        with client.chat.completions.stream(
            model=model, messages=MESSAGES, response_format=Person
        ) as stream:
            for _event in stream:
                pass
            completion = stream.get_final_completion()
        # then
        choice = completion.choices[0]
        assert (model, choice.message.parsed) == (model, FAKE_PERSON)
        assert (model, choice.finish_reason, choice.message.tool_calls) == (model, "stop", None)


def test_json_schema_content_is_a_conforming_document_streamed_and_not(client: openai.OpenAI):
    for model in MODELS:
        # when
        completion = client.chat.completions.create(
            model=model, messages=MESSAGES, response_format=PERSON_FORMAT
        )
        chunks = list(
            client.chat.completions.create(
                model=model, messages=MESSAGES, response_format=PERSON_FORMAT, stream=True
            )
        )
        # then
        content = completion.choices[0].message.content or ""
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert (model, orjson.loads(content)) == (model, {"name": "fake", "age": 1})
        assert (model, orjson.loads(streamed)) == (model, {"name": "fake", "age": 1})
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert (model, [f for f in finishes if f]) == (model, ["stop"])
        assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)


def test_json_object_content_is_a_json_object_from_either_api_style(client: openai.OpenAI):
    for model in MODELS:
        # when
        completion = client.chat.completions.create(
            model=model, messages=MESSAGES, response_format={"type": "json_object"}
        )
        # then
        content = completion.choices[0].message.content or ""
        assert (model, type(orjson.loads(content))) == (model, dict)
        assert (model, completion.choices[0].finish_reason) == (model, "stop")


def test_the_anthropic_upstream_is_asked_through_a_forced_answer_tool(client, fresh_live):
    # when
    client.chat.completions.parse(
        model="anthropic/claude-sonnet-4", messages=MESSAGES, response_format=Person
    )
    # then
    sent = fresh_live.fakes["anthro"].stats()["last_request"]["body"]
    assert "response_format" not in sent
    assert [tool["name"] for tool in sent["tools"]] == ["structured_output__Person"]
    assert sent["tools"][0]["input_schema"]["required"] == ["name", "age"]
    assert sent["tool_choice"] == {
        "type": "tool",
        "name": "structured_output__Person",
        "disable_parallel_tool_use": True,
    }
