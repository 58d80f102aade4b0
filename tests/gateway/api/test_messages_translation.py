"""Anthropic Messages ingress translation (SPEC R-API-9): a Messages request -> a chat body,
a chat completion -> a Messages `message`, chat SSE chunks -> the Messages event stream,
and errors in Anthropic's envelope. Pure translation, so these run without a server or a
database. The official `anthropic` SDK is the judge of every output (its pydantic types, and
its own client reading our bytes through an in-memory transport); the fake upstream's strict
validators hold the Anthropic fixtures and the chat bodies to the real APIs' rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import anthropic.types
import httpx
import httpx2
import orjson
import pydantic
import pytest
from anthropic.types.beta.message_create_params import (
    MessageCreateParamsNonStreaming as BetaParams,
)
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming as StableParams,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from fakeupstream.strict import MESSAGES_FIELDS, check_chat, check_messages
from gateway.api.anthropic.request import (
    FIELDS,
    MessagesRequestError,
    to_chat_body,
    without_anthropic_extras,
)
from gateway.api.anthropic.response import to_message
from gateway.api.anthropic.stream import relay_messages
from gateway.errors import anthropic_error_body
from gateway.request_path.parse import validate_chat
from gateway.upstream.attempt import Opened
from gateway.upstream.providers import openai
from gateway.upstream.streaming import DONE_FRAME, SSEParser, frame_json
from gateway.upstream.target import Target
from routing.engine.affinity.sessions import detect_session
from routing.engine.tiers.choose import classify, tier_config
from routing.engine.tiers.pins import HARD
from tests.routing.builders import make_endpoint

MODEL = "claude-sonnet-4-5"
ANSWERING_MODEL = "openai/gpt-5"
MESSAGE_ID = "msg_0123456789abcdef"
BASE_URL = "http://switchyard.test"  # never reached: the SDK's transport is in memory
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
EPHEMERAL = {"type": "ephemeral"}
HI = {"role": "user", "content": "hi"}
ABSENT = object()  # an expected chat field that must not be there
EVENTS = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)
# The OpenAI-style endpoint a relayed stream comes from (only its model and timeouts are read).
RELAYED_BY = Target(make_endpoint(model=ANSWERING_MODEL), "http://upstream.test", "openai",
                    "sk-test-5f0e9c2a7b1d4e38", 1.0, 1.0, 5.0)  # fmt: skip
TIERS = tier_config({"aliases": {"auto": {"easy": "small", "hard": "big"}}})


def request(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1024, "messages": [HI], **fields}


def anthropic_view(body: dict[str, Any]) -> dict[str, Any]:
    """The body as Anthropic would see it: without Switchyard's own fields (and those the
    fake does not model), which are not part of Anthropic's API."""
    return {key: value for key, value in body.items() if key in MESSAGES_FIELDS}


def chat_of(body: dict[str, Any]) -> dict[str, Any]:
    """The translated chat body, after checking that the fixture is a request Anthropic
    accepts and the result one the gateway and a strict OpenAI-style upstream accept."""
    check_messages(anthropic_view(body))
    chat = to_chat_body(body).body
    validate_chat(chat)
    check_chat(chat)
    return chat


def tool(name: str, **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return {"name": name, "description": f"{name} tool", "input_schema": schema, **extra}


def chat_tool(name: str, **extra: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    function = {"name": name, "parameters": schema, "description": f"{name} tool"}
    return {"type": "function", "function": function, **extra}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def tool_use(call_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def tool_result(call_id: str, content: Any = None, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, **extra}
    return block if content is None else {**block, "content": content}


def chat_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def calling(*blocks: Any) -> list[dict[str, Any]]:
    """A conversation where the assistant called `lookup` (toolu_1) and the user answers."""
    return [
        HI,
        {"role": "assistant", "content": [tool_use("toolu_1", "lookup", {"q": "x"})]},
        {"role": "user", "content": list(blocks)},
    ]


CALLED = [HI, {"role": "assistant", "content": None,
               "tool_calls": [chat_call("toolu_1", "lookup", '{"q":"x"}')]}]  # fmt: skip


# Request: top-level fields.


@pytest.mark.parametrize(
    ("_case", "fields", "expected"),
    [
        ("model and max_tokens", {}, {"model": MODEL, "max_tokens": 1024}),
        ("sampling", {"temperature": 0.2, "top_p": 0.9, "top_k": 40},
         {"temperature": 0.2, "top_p": 0.9, "top_k": 40}),
        ("stream", {"stream": True}, {"stream": True}),
        ("stop_sequences", {"stop_sequences": ["\n\nHuman:", "END"]},
         {"stop": ["\n\nHuman:", "END"]}),
        ("no stop sequences", {"stop_sequences": []}, {"stop": ABSENT}),
        ("metadata.user_id is the user and the session",
         {"metadata": {"user_id": "user-42"}}, {"user": "user-42", "session_id": "user-42",
                                                 "metadata": ABSENT}),
        ("the client's session_id wins", {"metadata": {"user_id": "u"}, "session_id": "s-1"},
         {"user": "u", "session_id": "s-1"}),
        ("no user_id", {"metadata": {"user_id": None}}, {"user": ABSENT, "session_id": ABSENT}),
        ("a small thinking budget is medium effort",
         {"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}},
         {"reasoning_effort": "medium", "thinking": {"type": "enabled", "budget_tokens": 1024}}),
        ("a large thinking budget is high effort",
         {"max_tokens": 32000, "thinking": {"type": "enabled", "budget_tokens": 16384}},
         {"reasoning_effort": "high"}),
        ("adaptive thinking is Anthropic's default effort", {"thinking": {"type": "adaptive"}},
         {"reasoning_effort": "high", "thinking": {"type": "adaptive"}}),
        ("output_config.effort wins", {"thinking": {"type": "adaptive"},
                                       "output_config": {"effort": "low"}},
         {"reasoning_effort": "low"}),
        ("effort max is chat's xhigh", {"output_config": {"effort": "max"}},
         {"reasoning_effort": "xhigh", "thinking": ABSENT}),
        ("disabled thinking asks for no effort", {"thinking": {"type": "disabled"}},
         {"reasoning_effort": ABSENT, "thinking": {"type": "disabled"}}),
        ("output_config.format", {"output_config": {"format": {
            "type": "json_schema", "schema": {"type": "object"}}}},
         {"response_format": {"type": "json_schema",
                              "json_schema": {"name": "response", "schema": {"type": "object"}}}}),
        ("Switchyard's fields pass", {"models": ["a", "b"], "provider": {"order": ["x"]},
                                      "routing": {"strategy": "cost"}, "residency": "eu"},
         {"models": ["a", "b"], "provider": {"order": ["x"]}, "routing": {"strategy": "cost"},
          "residency": "eu"}),
        ("dropped fields", {"service_tier": "standard_only", "speed": "fast",
                            "cache_control": EPHEMERAL, "diagnostics": {},
                            "context_management": {"edits": []}, "future_beta_field": 1},
         {"service_tier": ABSENT, "speed": ABSENT, "cache_control": ABSENT,
          "diagnostics": ABSENT, "context_management": ABSENT, "future_beta_field": ABSENT}),
        ("values that ask for nothing", {"mcp_servers": [], "inference_geo": "global"},
         {"mcp_servers": ABSENT, "inference_geo": ABSENT}),
    ],
)  # fmt: skip
def test_r_api_9_top_level_fields_map_to_chat(_case, fields, expected):
    # given
    body = request(**fields)
    # when
    chat = chat_of(body)
    # then
    for name, value in expected.items():
        assert chat.get(name, ABSENT) == value, name


def test_r_api_9_echo_reports_the_requested_model():
    # when
    translated = to_chat_body(request())
    # then
    assert translated.echo == {"model": MODEL}


def test_r_api_9_every_sdk_field_has_a_handling():
    # given: the fields of the SDK's create params, beta ones included (`betas` is a header)
    fields: set[str] = set()
    for params in (StableParams, BetaParams):
        fields |= params.__required_keys__ | params.__optional_keys__
    # then: the table decides each of them
    assert fields - {"betas"} - set(FIELDS) == set()
    assert set(FIELDS.values()) <= {"translate", "pass", "drop", "refuse"}


# Request: system and messages.


@pytest.mark.parametrize(
    ("_case", "system", "messages", "expected"),
    [
        ("a string system prompt", "Be brief.", [HI],
         [{"role": "system", "content": "Be brief."}, HI]),
        ("one plain system block is a string", [text("Be brief.")], [HI],
         [{"role": "system", "content": "Be brief."}, HI]),
        ("system blocks keep cache_control", [text("A"), text("B", cache_control=EPHEMERAL)],
         [HI], [{"role": "system", "content": [text("A"), text("B", cache_control=EPHEMERAL)]},
                HI]),
        ("user text blocks", None, [{"role": "user", "content": [text("a"), text("b")]}],
         [{"role": "user", "content": [text("a"), text("b")]}]),
        ("user cache_control", None,
         [{"role": "user", "content": [text("a", cache_control=EPHEMERAL)]}],
         [{"role": "user", "content": [text("a", cache_control=EPHEMERAL)]}]),
        ("a base64 image is a data URL", None, [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG_B64}}, text("what is it?")]}],
         [{"role": "user", "content": [
             {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
             text("what is it?")]}]),
        ("a url image", None, [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"},
             "cache_control": EPHEMERAL}]}],
         [{"role": "user", "content": [{"type": "image_url", "cache_control": EPHEMERAL,
                                        "image_url": {"url": "https://x.test/a.png"}}]}]),
        ("assistant text then a compact tool call", None,
         [HI, {"role": "assistant", "content": [
             text("Looking."), tool_use("toolu_1", "lookup", {"q": "x", "n": [1, 2]})]},
          {"role": "user", "content": [tool_result("toolu_1", "found")]}],
         [HI, {"role": "assistant", "content": "Looking.",
               "tool_calls": [chat_call("toolu_1", "lookup", '{"q":"x","n":[1,2]}')]},
          {"role": "tool", "tool_call_id": "toolu_1", "content": "found"}]),
        ("thinking blocks are dropped", None,
         [HI, {"role": "assistant", "content": [
             {"type": "thinking", "thinking": "hmm", "signature": "sig"},
             {"type": "redacted_thinking", "data": "opaque"}, text("Hello.")]},
          {"role": "user", "content": "and?"}],
         [HI, {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "and?"}]),
        ("a string assistant turn", None,
         [HI, {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "bye"}],
         [HI, {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "bye"}]),
    ],
)  # fmt: skip
def test_r_api_9_system_and_messages_map_to_chat_messages(_case, system, messages, expected):
    # given
    fields: dict[str, Any] = {"messages": messages, "tools": [tool("lookup")]}
    if system is not None:
        fields["system"] = system
    # when
    chat = chat_of(request(**fields))
    # then
    assert chat["messages"] == expected


@pytest.mark.parametrize(
    ("_case", "blocks", "expected_tail"),
    [
        ("string content", [tool_result("toolu_1", "42")],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": "42"}]),
        ("no content", [tool_result("toolu_1")],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": ""}]),
        ("text blocks", [tool_result("toolu_1", [text("a"), text("b")])],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": [text("a"), text("b")]}]),
        ("is_error becomes a prefix", [tool_result("toolu_1", "no such file", is_error=True)],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": "Error: no such file"}]),
        ("is_error false", [tool_result("toolu_1", "ok", is_error=False)],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": "ok"}]),
        ("cache_control goes on the last part",
         [tool_result("toolu_1", "42", cache_control=EPHEMERAL)],
         [{"role": "tool", "tool_call_id": "toolu_1",
           "content": [text("42", cache_control=EPHEMERAL)]}]),
        ("images follow as a user message", [tool_result("toolu_1", [
            text("screenshot:"), {"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": PNG_B64}}])],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": "screenshot:"},
          {"role": "user", "content": [{"type": "image_url", "image_url": {
              "url": f"data:image/png;base64,{PNG_B64}"}}]}]),
        ("text after the results", [tool_result("toolu_1", "42"), text("now explain")],
         [{"role": "tool", "tool_call_id": "toolu_1", "content": "42"},
          {"role": "user", "content": "now explain"}]),
    ],
)  # fmt: skip
def test_r_api_9_tool_results_become_tool_messages(_case, blocks, expected_tail):
    # when
    chat = chat_of(request(messages=calling(*blocks), tools=[tool("lookup")]))
    # then
    assert chat["messages"] == [*CALLED, *expected_tail]


@pytest.mark.parametrize(
    ("_case", "fields", "expected"),
    [
        ("custom tools are function tools", {"tools": [tool("a"), tool("b", type="custom")]},
         {"tools": [chat_tool("a"), chat_tool("b")], "tool_choice": ABSENT}),
        ("tool cache_control is kept; hints are dropped",
         {"tools": [tool("a", cache_control=EPHEMERAL, strict=True, defer_loading=True,
                         eager_input_streaming=True, input_examples=[{"q": "x"}])]},
         {"tools": [chat_tool("a", cache_control=EPHEMERAL)]}),
        ("auto", {"tool_choice": {"type": "auto"}}, {"tool_choice": "auto"}),
        ("any is required", {"tool_choice": {"type": "any"}}, {"tool_choice": "required"}),
        ("none", {"tool_choice": {"type": "none"}}, {"tool_choice": "none"}),
        ("a named tool", {"tool_choice": {"type": "tool", "name": "a"}},
         {"tool_choice": {"type": "function", "function": {"name": "a"}}}),
        ("no parallel tool use", {"tool_choice": {"type": "auto",
                                                  "disable_parallel_tool_use": True}},
         {"tool_choice": "auto", "parallel_tool_calls": False}),
        ("parallel allowed", {"tool_choice": {"type": "any", "disable_parallel_tool_use": False}},
         {"tool_choice": "required", "parallel_tool_calls": ABSENT}),
    ],
)  # fmt: skip
def test_r_api_9_tools_and_tool_choice_map_to_chat(_case, fields, expected):
    # given
    body = request(**{"tools": [tool("a")], **fields})
    # when
    chat = chat_of(body)
    # then
    for name, value in expected.items():
        assert chat.get(name, ABSENT) == value, name


def test_r_api_9_tool_choice_without_tools_is_dropped():
    # when
    chat = to_chat_body(request(tool_choice={"type": "auto"})).body
    # then
    assert "tool_choice" not in chat


# Request: refusals, each naming the Anthropic field.

WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}


@pytest.mark.parametrize(
    ("_case", "body", "param"),
    [
        ("no max_tokens", {"model": MODEL, "messages": [HI]}, "max_tokens"),
        ("max_tokens 0", request(max_tokens=0), "max_tokens"),
        ("max_tokens a string", request(max_tokens="10"), "max_tokens"),
        ("max_tokens a boolean", request(max_tokens=True), "max_tokens"),
        ("no model", {"max_tokens": 5, "messages": [HI]}, "model"),
        ("no messages", {"model": MODEL, "max_tokens": 5}, "messages"),
        ("empty messages", request(messages=[]), "messages"),
        ("a system role", request(messages=[{"role": "system", "content": "x"}]),
         "messages[0].role"),
        ("content a number", request(messages=[{"role": "user", "content": 3}]),
         "messages[0].content"),
        ("empty user content", request(messages=[{"role": "user", "content": []}]),
         "messages[0].content"),
        ("a block not an object", request(messages=[{"role": "user", "content": ["x"]}]),
         "messages[0].content[0]"),
        ("a text block without text", request(messages=[
            {"role": "user", "content": [{"type": "text"}]}]), "messages[0].content[0].text"),
        ("a document block", request(messages=[{"role": "user", "content": [
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": "x"}}]}]), "messages[0].content[0].type"),
        ("a server tool block", request(messages=[HI, {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {}}]}]), "messages[1].content[0].type"),
        ("tool_use from the user", request(messages=[{"role": "user", "content": [
            tool_use("toolu_1", "a", {})]}]), "messages[0].content[0].type"),
        ("thinking from the user", request(messages=[{"role": "user", "content": [
            {"type": "thinking", "thinking": "x", "signature": "s"}]}]),
         "messages[0].content[0].type"),
        ("an image by file id", request(messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "file", "file_id": "file_1"}}]}]),
         "messages[0].content[0].source"),
        ("an image without data", request(messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}]}]),
         "messages[0].content[0].source.data"),
        ("an unknown image source", request(messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "s3"}}]}]),
         "messages[0].content[0].source.type"),
        ("cache_control not an object", request(messages=[{"role": "user", "content": [
            text("a", cache_control="yes")]}]), "messages[0].content[0].cache_control"),
        ("tool_use without an id", request(messages=[HI, {"role": "assistant", "content": [
            {"type": "tool_use", "name": "a", "input": {}}]}]), "messages[1].content[0].id"),
        ("tool_use input not an object", request(messages=[HI, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "a", "input": [1]}]}]),
         "messages[1].content[0].input"),
        ("a tool result holding a document", request(messages=calling(tool_result(
            "toolu_1", [{"type": "document", "source": {}}]))),
         "messages[2].content[0].content[0].type"),
        ("is_error not a boolean", request(messages=calling(tool_result(
            "toolu_1", "x", is_error="yes"))), "messages[2].content[0].is_error"),
        ("a system image", request(system=[{"type": "image", "source": {}}]), "system[0].type"),
        ("system a number", request(system=3), "system"),
        ("five stop sequences", request(stop_sequences=["a", "b", "c", "d", "e"]),
         "stop_sequences"),
        ("a stop sequence not a string", request(stop_sequences=["a", 1]), "stop_sequences[1]"),
        ("stop_sequences a string", request(stop_sequences="a"), "stop_sequences"),
        ("temperature above Anthropic's 1", request(temperature=1.5), "temperature"),
        ("top_p above 1", request(top_p=2), "top_p"),
        ("negative top_k", request(top_k=-1), "top_k"),
        ("stream not a boolean", request(stream="yes"), "stream"),
        ("metadata not an object", request(metadata="u"), "metadata"),
        ("user_id a number", request(metadata={"user_id": 7}), "metadata.user_id"),
        ("an unknown thinking type", request(thinking={"type": "sometimes"}), "thinking.type"),
        ("a budget under Anthropic's minimum", request(
            thinking={"type": "enabled", "budget_tokens": 500}), "thinking.budget_tokens"),
        ("a budget not under max_tokens", request(
            thinking={"type": "enabled", "budget_tokens": 1024}), "thinking.budget_tokens"),
        ("an unknown effort", request(output_config={"effort": "extreme"}),
         "output_config.effort"),
        ("output_config not an object", request(output_config=[]), "output_config"),
        ("a format that is not a schema", request(output_config={"format": {"type": "xml"}}),
         "output_config.format.type"),
        ("a format without a schema", request(output_config={"format": {
            "type": "json_schema"}}), "output_config.format.schema"),
        ("tools not an array", request(tools={"a": 1}), "tools"),
        ("web search", request(tools=[tool("a"), WEB_SEARCH]), "tools[1]"),
        ("code execution", request(tools=[{"type": "code_execution_20250825",
                                           "name": "code_execution"}]), "tools[0]"),
        ("Anthropic's bash tool", request(tools=[{"type": "bash_20250124", "name": "bash"}]),
         "tools[0]"),
        ("a tool without a name", request(tools=[{"input_schema": {"type": "object"}}]),
         "tools[0].name"),
        ("a tool without a schema", request(tools=[{"name": "a"}]), "tools[0].input_schema"),
        ("a tool schema not an object schema", request(tools=[{
            "name": "a", "input_schema": {"type": "array"}}]), "tools[0].input_schema"),
        ("a description not a string", request(tools=[tool("a", description=3)]),
         "tools[0].description"),
        ("a tool called from code execution", request(tools=[tool(
            "a", allowed_callers=["code_execution_20250825"])]), "tools[0].allowed_callers"),
        ("tool cache_control not an object", request(tools=[tool("a", cache_control=1)]),
         "tools[0].cache_control"),
        ("an unknown tool_choice", request(tools=[tool("a")], tool_choice={"type": "all"}),
         "tool_choice.type"),
        ("a named choice without a name", request(tools=[tool("a")],
                                                  tool_choice={"type": "tool"}),
         "tool_choice.name"),
        ("any without tools", request(tool_choice={"type": "any"}), "tool_choice"),
        ("disable_parallel_tool_use not a boolean", request(tools=[tool("a")], tool_choice={
            "type": "auto", "disable_parallel_tool_use": "yes"}),
         "tool_choice.disable_parallel_tool_use"),
        ("a container", request(container="container_1"), "container"),
        ("MCP servers", request(mcp_servers=[{"type": "url", "url": "https://mcp.test",
                                              "name": "x"}]), "mcp_servers"),
        ("an inference region", request(inference_geo="us"), "inference_geo"),
        ("a server-held thread", request(thread={"type": "create"}), "thread"),
        ("a compaction request", request(compaction={"type": "auto"}), "compaction"),
    ],
)  # fmt: skip
def test_r_api_9_unservable_requests_are_refused_naming_the_field(_case, body, param):
    # when
    with pytest.raises(MessagesRequestError) as refused:
        to_chat_body(body)
    # then
    assert refused.value.param == param
    assert f"`{param}`" in refused.value.message


def test_r_api_9_without_anthropic_extras_leaves_a_plain_chat_body():
    # given
    chat = to_chat_body(request(
        system=[text("sys", cache_control=EPHEMERAL)], top_k=5, max_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": 2048},
        tools=[tool("a", cache_control=EPHEMERAL)],
        messages=[{"role": "user", "content": [text("hi", cache_control=EPHEMERAL)]}],
    )).body  # fmt: skip
    # when
    plain = without_anthropic_extras(chat)
    # then
    assert "cache_control" not in orjson.dumps(plain).decode()
    assert "thinking" not in plain
    assert "top_k" not in plain
    assert plain["messages"] == [{"role": "system", "content": [text("sys")]},
                                 {"role": "user", "content": [text("hi")]}]  # fmt: skip
    assert plain["tools"] == [chat_tool("a")]
    assert plain["reasoning_effort"] == "medium"  # still the hard tier, without `thinking`
    assert chat["top_k"] == 5  # the translated body itself is unchanged


def test_r_api_9_metadata_user_id_keys_the_session():
    # given
    chat = chat_of(request(metadata={"user_id": "user_abc_account_1_session_2"}))
    # when
    key, source = detect_session({}, chat, workspace_id=1, api_key_id=2, model=MODEL)
    # then
    assert (key, source) == ("1:2:session_id:user_abc_account_1_session_2", "session_id")


@pytest.mark.parametrize(
    ("_case", "thinking"),
    [
        ("enabled", {"type": "enabled", "budget_tokens": 1024}),
        ("adaptive", {"type": "adaptive"}),
    ],
)
def test_r_api_9_thinking_sends_the_request_to_the_hard_tier(_case, thinking):
    # given
    chat = to_chat_body(request(max_tokens=4096, thinking=thinking)).body
    # when
    verdicts = [classify(body, TIERS) for body in (chat, without_anthropic_extras(chat))]
    # then
    assert [verdict.tier for verdict in verdicts] == [HARD, HARD]


# Response: a chat completion as a Messages `message`.


def completion(
    message: dict[str, Any],
    finish_reason: str | None = "stop",
    *,
    usage: dict[str, Any] | None = None,
    **choice_extra: Any,
) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", **message},
              "finish_reason": finish_reason, **choice_extra}  # fmt: skip
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": ANSWERING_MODEL,
            "choices": [choice], "usage": usage or USAGE}  # fmt: skip


USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
         "prompt_tokens_details": {"cached_tokens": 60}}  # fmt: skip
ANTHROPIC_USAGE = {"input_tokens": 40, "output_tokens": 20, "cache_read_input_tokens": 60,
                   "cache_creation_input_tokens": 0}  # fmt: skip


@pytest.mark.parametrize(
    ("_case", "chat", "content", "stop_reason", "stop_sequence"),
    [
        ("text", completion({"content": "Hello."}), [text("Hello.")], "end_turn", None),
        ("length", completion({"content": "Hel"}, "length"), [text("Hel")], "max_tokens", None),
        ("tool calls", completion({"content": None, "tool_calls": [
            chat_call("call_1", "lookup", '{"q":"x"}'),
            chat_call("call_2", "lookup", "")]}, "tool_calls"),
         [tool_use("call_1", "lookup", {"q": "x"}), tool_use("call_2", "lookup", {})],
         "tool_use", None),
        ("text then a tool call", completion({"content": "Let me look.", "tool_calls": [
            chat_call("call_1", "lookup", '{"q":"x"}')]}, "tool_calls"),
         [text("Let me look."), tool_use("call_1", "lookup", {"q": "x"})], "tool_use", None),
        ("invalid arguments are an empty input", completion({"tool_calls": [
            chat_call("call_1", "lookup", '{"q": "x'), chat_call("call_2", "lookup", "[1]")]},
            "length"),
         [tool_use("call_1", "lookup", {}), tool_use("call_2", "lookup", {})], "max_tokens",
         None),
        ("tool calls that say stop", completion({"tool_calls": [
            chat_call("call_1", "lookup", "{}")]}, "stop"),
         [tool_use("call_1", "lookup", {})], "tool_use", None),
        ("ids Anthropic accepts", completion({"tool_calls": [
            chat_call("functions.lookup:0", "lookup", "{}")]}, "tool_calls"),
         [tool_use("functions_lookup_0", "lookup", {})], "tool_use", None),
        ("content filter", completion({"content": ""}, "content_filter"), [], "refusal", None),
        ("an OpenAI refusal", completion({"content": None, "refusal": "I can't help."}),
         [text("I can't help.")], "refusal", None),
        ("a stop sequence vLLM names", completion({"content": "a"}, stop_reason="END"),
         [text("a")], "stop_sequence", "END"),
        ("a stop sequence SGLang names", completion({"content": "a"}, matched_stop="END"),
         [text("a")], "stop_sequence", "END"),
        ("a stop token is no sequence", completion({"content": "a"}, stop_reason=128001),
         [text("a")], "end_turn", None),
        ("no finish reason", completion({"content": "a"}, None), [text("a")], "end_turn", None),
    ],
)  # fmt: skip
def test_r_api_9_chat_completion_becomes_a_message(
    _case, chat, content, stop_reason, stop_sequence
):
    # when
    message = to_message(chat, message_id=MESSAGE_ID, requested_model=MODEL)
    # then
    anthropic.types.Message.model_validate(message)
    assert message == {
        "id": MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": ANSWERING_MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": ANTHROPIC_USAGE,
    }


@pytest.mark.parametrize(
    ("_case", "usage", "expected"),
    [
        ("none reported", {}, {"input_tokens": 0, "output_tokens": 0,
                               "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}),
        ("LiteLLM's cache writes", {"prompt_tokens": 100, "completion_tokens": 5,
                                    "cache_creation_input_tokens": 30,
                                    "prompt_tokens_details": {"cached_tokens": 50}},
         {"input_tokens": 20, "output_tokens": 5, "cache_read_input_tokens": 50,
          "cache_creation_input_tokens": 30}),
        ("OpenRouter's cache writes", {"prompt_tokens": 100, "completion_tokens": 5,
                                       "prompt_tokens_details": {"cached_tokens": 0,
                                                                 "cache_write_tokens": 70}},
         {"input_tokens": 30, "output_tokens": 5, "cache_read_input_tokens": 0,
          "cache_creation_input_tokens": 70}),
    ],
)  # fmt: skip
def test_r_api_9_usage_counts_input_without_the_cache(_case, usage, expected):
    # when
    message = to_message(completion({"content": "a"}, usage=usage or {"prompt_tokens": 0}),
                         message_id=MESSAGE_ID, requested_model=MODEL)  # fmt: skip
    # then
    assert message["usage"] == expected


def test_r_api_9_message_names_the_requested_model_when_the_completion_does_not():
    # given
    chat = {**completion({"content": "a"}), "model": None}
    # when
    message = to_message(chat, message_id=MESSAGE_ID, requested_model=MODEL)
    # then
    assert message["model"] == MODEL


# Errors in Anthropic's envelope.


@pytest.mark.parametrize(
    ("status", "error_type", "sdk_error"),
    [
        (400, "invalid_request_error", anthropic.BadRequestError),
        (401, "authentication_error", anthropic.AuthenticationError),
        (402, "billing_error", anthropic.APIStatusError),
        (403, "permission_error", anthropic.PermissionDeniedError),
        (404, "not_found_error", anthropic.NotFoundError),
        (409, "invalid_request_error", anthropic.ConflictError),
        (413, "request_too_large", anthropic.APIStatusError),
        (422, "invalid_request_error", anthropic.UnprocessableEntityError),
        (429, "rate_limit_error", anthropic.RateLimitError),
        (500, "api_error", anthropic.InternalServerError),
        (502, "api_error", anthropic.InternalServerError),
        (503, "overloaded_error", anthropic.InternalServerError),
        (504, "timeout_error", anthropic.InternalServerError),
        (529, "overloaded_error", anthropic.InternalServerError),
    ],
)
def test_r_api_9_errors_have_anthropic_types_by_status(status, error_type, sdk_error):
    # given
    body = anthropic_error_body(status, "went wrong")
    client = sdk_client(lambda _request: httpx2.Response(status, json=body))
    # when
    with pytest.raises(sdk_error) as raised:
        client.messages.create(model=MODEL, max_tokens=5, messages=[HI])
    # then
    assert body == {"type": "error", "error": {"type": error_type, "message": "went wrong"}}
    assert raised.value.status_code == status
    assert raised.value.body == body
    if error_type != "request_too_large":  # on Anthropic's errors page, not in the SDK union
        anthropic.types.ErrorResponse.model_validate(body)


# The SDK as the client: our bytes through its own transport, parsing and accumulation.


def sdk_client(handler: Callable[[httpx2.Request], httpx2.Response]) -> anthropic.Anthropic:
    http_client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return anthropic.Anthropic(
        api_key="sk-sy-test", base_url=BASE_URL, http_client=http_client, max_retries=0
    )


def as_sdk_reads(message: Any) -> dict[str, Any]:
    """A message as the SDK models it, nulls left out (the SDK fills them in)."""
    model = (
        anthropic.types.Message.model_validate(message) if isinstance(message, dict) else message
    )
    return model.model_dump(exclude_none=True)


def sse_response(body: bytes) -> Callable[[httpx2.Request], httpx2.Response]:
    headers = {"content-type": "text/event-stream"}
    return lambda _request: httpx2.Response(200, content=body, headers=headers)


def test_r_api_9_sdk_reads_a_translated_message():
    # given
    chat = completion({"content": "Hi.", "tool_calls": [chat_call("call_1", "a", "{}")]},
                      "tool_calls")  # fmt: skip
    message = to_message(chat, message_id=MESSAGE_ID, requested_model=MODEL)
    client = sdk_client(lambda _request: httpx2.Response(200, json=message))
    # when
    answer = client.messages.create(model=MODEL, max_tokens=5, messages=[HI])
    # then
    assert as_sdk_reads(answer) == as_sdk_reads(message)


def test_r_api_9_sdk_request_translates():
    # given: the request exactly as the SDK serialises it
    sent: list[dict[str, Any]] = []

    def capture(request: httpx2.Request) -> httpx2.Response:
        sent.append(orjson.loads(request.content))
        return httpx2.Response(
            200,
            json=to_message(
                completion({"content": "ok"}), message_id=MESSAGE_ID, requested_model=MODEL
            ),
        )

    client = sdk_client(capture)
    client.messages.create(
        model=MODEL, max_tokens=2048, system=[{"type": "text", "text": "sys"}],
        messages=[HI], tools=[tool("a")], tool_choice={"type": "auto"},
        thinking={"type": "enabled", "budget_tokens": 1024},
        metadata={"user_id": "u-1"}, stop_sequences=["END"],
    )  # fmt: skip
    # when
    chat = chat_of(sent[0])
    # then
    assert chat == {
        "model": MODEL, "max_tokens": 2048, "stop": ["END"],
        "messages": [{"role": "system", "content": "sys"}, HI],
        "tools": [chat_tool("a")], "tool_choice": "auto",
        "thinking": {"type": "enabled", "budget_tokens": 1024}, "reasoning_effort": "medium",
        "user": "u-1", "session_id": "u-1",
    }  # fmt: skip


# Stream: chat chunk frames -> Anthropic events.


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None,
          **choice_extra: Any) -> bytes:  # fmt: skip
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason, **choice_extra}
    return frame_json({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                       "model": ANSWERING_MODEL, "choices": [choice]})  # fmt: skip


def tail(usage: dict[str, Any] | None = USAGE) -> list[bytes]:
    """How an OpenAI-style upstream's stream ends: its usage chunk (include_usage), then
    [DONE]."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": ANSWERING_MODEL, "choices": []}  # fmt: skip
    frames = [frame_json({**head, "usage": usage})] if usage else []
    return [*frames, DONE_FRAME]


def text_chunks(*pieces: str) -> list[bytes]:
    return [chunk({"role": "assistant", "content": ""}),
            *(chunk({"content": piece}) for piece in pieces)]  # fmt: skip


def call_chunks(index: int, call_id: str, name: str, *fragments: str) -> list[bytes]:
    first = {"index": index, "id": call_id, "type": "function",
             "function": {"name": name, "arguments": ""}}  # fmt: skip
    rest = [{"index": index, "function": {"arguments": part}} for part in fragments]
    return [chunk({"tool_calls": [call]}) for call in (first, *rest)]


def run(frames: list[bytes], *, split: Callable[[bytes], list[bytes]] | None = None,
        input_tokens: int = 0) -> bytes:  # fmt: skip
    """What a Messages client gets when an OpenAI-style upstream sends `frames` (cut on the
    wire by `split`): the executor's commit check (its chat translator read up to the first
    content), then the Messages relay (`relay_messages` over the executor's `relay`)."""
    data = b"".join(frames)
    pieces = iter(split(data) if split else frames)
    chat = openai.StreamTranslator(model=ANSWERING_MODEL, upstream_model=ANSWERING_MODEL)
    buffered: list[bytes] = []
    for piece in pieces:
        buffered.extend(chat.feed(piece))
        if chat.emitted_content or chat.error:
            break

    async def rest() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    async def collect() -> bytes:
        loop = asyncio.get_running_loop()
        opened = Opened(RELAYED_BY, httpx.Response(200), chat, rest(), buffered, 0.0, 0,
                        deadline_at=loop.time() + 60)  # fmt: skip
        frames = relay_messages(opened, message_id=MESSAGE_ID, input_tokens=input_tokens,
                                on_end=lambda _opened, _error: None)  # fmt: skip
        return b"".join([piece async for piece in frames])

    return asyncio.run(collect())


def events(data: bytes) -> list[dict[str, Any]]:
    """The events, each checked: its `event:` name is its type, and every one but ping and
    error (which the SDK handles before parsing) is a valid SDK stream event."""
    parsed = []
    for event in SSEParser().feed(data):
        payload = orjson.loads(event.data)
        assert event.event == payload["type"]
        if payload["type"] not in ("ping", "error"):
            EVENTS.validate_python(payload)
        parsed.append(payload)
    return parsed


def test_r_api_9_stream_event_sequence_for_text():
    # when
    out = events(run([*text_chunks("Hel", "lo"), chunk(finish_reason="stop"), *tail()]))
    # then
    assert out == [
        {"type": "message_start", "message": {
            "id": MESSAGE_ID, "type": "message", "role": "assistant", "model": ANSWERING_MODEL,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0}}},
        {"type": "ping"},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": ANTHROPIC_USAGE},
        {"type": "message_stop"},
    ]  # fmt: skip


def test_r_api_9_stream_tool_calls_are_tool_use_blocks_with_json_deltas():
    # given
    frames = [*text_chunks("Checking."), *call_chunks(0, "call_1", "lookup", '{"q":', '"x"}'),
              *call_chunks(1, "call_2", "lookup", "{}"), chunk(finish_reason="tool_calls"),
              *tail()]  # fmt: skip
    # when
    out = events(run(frames))
    # then
    blocks = [(e["type"], e.get("index"), e.get("content_block") or e.get("delta"))
              for e in out if e["type"].startswith("content_block")]  # fmt: skip
    assert blocks == [
        ("content_block_start", 0, {"type": "text", "text": ""}),
        ("content_block_delta", 0, {"type": "text_delta", "text": "Checking."}),
        ("content_block_stop", 0, None),
        ("content_block_start", 1, {"type": "tool_use", "id": "call_1", "name": "lookup",
                                    "input": {}}),
        ("content_block_delta", 1, {"type": "input_json_delta", "partial_json": '{"q":'}),
        ("content_block_delta", 1, {"type": "input_json_delta", "partial_json": '"x"}'}),
        ("content_block_stop", 1, None),
        ("content_block_start", 2, {"type": "tool_use", "id": "call_2", "name": "lookup",
                                    "input": {}}),
        ("content_block_delta", 2, {"type": "input_json_delta", "partial_json": "{}"}),
        ("content_block_stop", 2, None),
    ]  # fmt: skip
    assert out[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}


def test_r_api_9_stream_without_usage_reports_the_estimate():
    # when
    out = events(run([*text_chunks("a"), chunk(finish_reason="length"), *tail(usage=None)],
                     input_tokens=12))  # fmt: skip
    # then
    assert out[0]["message"]["usage"] == {"input_tokens": 12, "output_tokens": 0}
    assert out[-2]["usage"] == {
        "input_tokens": 12,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert out[-2]["delta"]["stop_reason"] == "max_tokens"


def test_r_api_9_stream_error_frame_is_an_error_event_the_sdk_raises():
    # given
    failure = {"error": {"message": "upstream broke", "type": "upstream_error",
                         "code": "stream_interrupted", "param": None}}  # fmt: skip
    data = run([*text_chunks("par"), frame_json(failure)])
    client = sdk_client(sse_response(data))
    # when
    with pytest.raises(anthropic.APIStatusError) as raised:
        for _event in client.messages.create(model=MODEL, max_tokens=5, messages=[HI],
                                             stream=True):  # fmt: skip
            pass
    # then
    assert events(data)[-1] == {
        "type": "error",
        "error": {"type": "api_error", "message": "upstream broke"},
    }
    assert raised.value.body == events(data)[-1]


def test_r_api_9_stream_that_stops_short_ends_with_an_error_event():
    # when
    out = events(run(text_chunks("par")))
    # then
    assert out[-1]["type"] == "error"
    assert [e["type"] for e in out].count("message_stop") == 0


def test_r_api_9_stream_names_a_stop_sequence_the_upstream_reports():
    # when
    out = events(run([*text_chunks("a"), chunk(finish_reason="stop", stop_reason="END"),
                      *tail()]))  # fmt: skip
    # then
    assert out[-2]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "END"}


@pytest.mark.parametrize(
    ("_case", "message", "finish_reason", "chunks"),
    [
        ("text", {"content": "Hello there."}, "stop", text_chunks("Hello", " there.")),
        ("text and tools", {"content": "On it.", "tool_calls": [
            chat_call("call_1", "lookup", '{"q":"x"}'), chat_call("call_2", "b", '{"n":1}')]},
         "tool_calls", [*text_chunks("On", " it."),
                        *call_chunks(0, "call_1", "lookup", '{"q"', ':"x"}'),
                        *call_chunks(1, "call_2", "b", '{"n":1}')]),
        ("cut short", {"content": "Hel"}, "length", text_chunks("Hel")),
    ],
)  # fmt: skip
def test_r_api_9_stream_accumulates_to_the_non_stream_message(
    _case, message, finish_reason, chunks
):
    # given
    expected = to_message(completion(message, finish_reason), message_id=MESSAGE_ID,
                          requested_model=MODEL)  # fmt: skip
    data = run([*chunks, chunk(finish_reason=finish_reason), *tail()])
    client = sdk_client(sse_response(data))
    # when
    with client.messages.stream(model=MODEL, max_tokens=5, messages=[HI]) as stream:
        final = stream.get_final_message()
    # then
    assert as_sdk_reads(final) == as_sdk_reads(expected)


SPLITS = st.lists(st.integers(min_value=0, max_value=10_000), max_size=12)
TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=150, deadline=None)
@given(answer=TEXTS, content_cuts=SPLITS, byte_cuts=SPLITS)
def test_r_api_9_streamed_text_arrives_whole_in_any_chunking(answer, content_cuts, byte_cuts):
    # given: the answer cut into content deltas, the frames cut anywhere on the wire
    cuts = sorted({cut % (len(answer) + 1) for cut in content_cuts} | {0, len(answer)})
    pieces = [answer[start:end] for start, end in zip(cuts, cuts[1:], strict=False)]
    frames = [*text_chunks(*pieces), chunk(finish_reason="stop"), *tail()]

    def split(data: bytes) -> list[bytes]:
        marks = sorted({cut % (len(data) + 1) for cut in byte_cuts} | {0, len(data)})
        return [data[start:end] for start, end in zip(marks, marks[1:], strict=False)]

    # when
    out = events(run(frames, split=split))
    # then
    deltas = [e["delta"]["text"] for e in out if e["type"] == "content_block_delta"]
    assert "".join(deltas) == answer
    assert [e["type"] for e in out][-2:] == ["message_delta", "message_stop"]


# Claude Code's request shape. Assembled from public documentation, not recorded traffic:
# code.claude.com/docs/en/llm-gateway-protocol (a gateway gets /v1/messages with the
# `anthropic-beta`/`anthropic-version` headers; the system prompt may open with an
# attribution block carrying the client version and a prompt fingerprint, whose exact line,
# `x-anthropic-billing-header: cc_version=…; cc_entrypoint=cli; cch=…;`, is as reported in
# motiful/cc-cache-audit), code.claude.com/docs/en/prompt-caching (tools, then the system
# prompt, then the first user message holding project context such as CLAUDE.md, then the
# conversation, with cache breakpoints on the system prompt and the latest turn), and the
# Messages API, extended thinking and context editing references on platform.claude.com
# (thinking blocks with signatures sent back in assistant turns, `budget_tokens` below
# `max_tokens` with temperature 1, `clear_thinking_20251015` that Claude Code sends when
# thinking is on, `metadata.user_id`, streaming).


def claude_code_tool(name: str, **properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties),
              "additionalProperties": False,
              "$schema": "http://json-schema.org/draft-07/schema#"}  # fmt: skip
    return {"name": name, "description": f"{name} (Claude Code built-in)", "input_schema": schema}


STRING = {"type": "string"}
CLAUDE_CODE_TOOLS = [
    claude_code_tool("Task", description=STRING, prompt=STRING, subagent_type=STRING),
    claude_code_tool("Bash", command=STRING, description=STRING),
    claude_code_tool("Glob", pattern=STRING),
    claude_code_tool("Grep", pattern=STRING),
    claude_code_tool("Read", file_path=STRING),
    claude_code_tool("Edit", file_path=STRING, old_string=STRING, new_string=STRING),
    claude_code_tool("Write", file_path=STRING, content=STRING),
    claude_code_tool("TodoWrite", todos={"type": "array", "items": {"type": "object"}}),
    claude_code_tool("WebFetch", url=STRING, prompt=STRING),
    claude_code_tool("WebSearch", query=STRING),
]
ATTRIBUTION = "x-anthropic-billing-header: cc_version=2.1.88.a3f; cc_entrypoint=cli; cch=00000;"
CLAUDE_CODE_USER_ID = ("user_7f3a9c0d2e1b4a5f6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b_"
                       "account__session_2b0c4f1e-8d3a-4c5b-9e6f-7a8b9c0d1e2f")  # fmt: skip
CLAUDE_CODE_REQUEST = {
    "model": "claude-sonnet-4-5-20250929",
    "max_tokens": 32000,
    "stream": True,
    "temperature": 1,
    "metadata": {"user_id": CLAUDE_CODE_USER_ID},
    "system": [
        text(ATTRIBUTION),
        text("You are Claude Code, Anthropic's official CLI for Claude.",
             cache_control=EPHEMERAL),
        text("You are an interactive CLI tool that helps users with software engineering "
             "tasks. Use the instructions below and the tools available to you.",
             cache_control=EPHEMERAL),
    ],
    "tools": CLAUDE_CODE_TOOLS,
    "messages": [
        {"role": "user", "content": [
            text("<system-reminder>\nAs you answer the user's questions, you can use the "
                 "following context:\n# claudeMd\nRun tests with `pytest -q`.\n"
                 "</system-reminder>"),
            text("The test in tests/test_parse.py fails; fix it."),
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Run the failing test first.",
             "signature": "EqQBCkYIBxgCKkBtRlmQ"},
            text("I'll run the failing test."),
            tool_use("toolu_01A09q90qw90lq917835lq9", "Bash",
                     {"command": "pytest -q tests/test_parse.py",
                      "description": "Run the failing test"}),
        ]},
        {"role": "user", "content": [
            tool_result("toolu_01A09q90qw90lq917835lq9",
                        "FAILED tests/test_parse.py::test_empty - ValueError", is_error=True,
                        cache_control=EPHEMERAL),
        ]},
    ],
    "thinking": {"type": "enabled", "budget_tokens": 31999},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
}  # fmt: skip


def test_r_api_9_claude_code_request_routes_as_a_chat_completion():
    # when
    chat = chat_of(CLAUDE_CODE_REQUEST)
    # then
    assert chat["messages"][0] == {"role": "system", "content": CLAUDE_CODE_REQUEST["system"]}
    assert [t["function"]["name"] for t in chat["tools"]] == [t["name"] for t in CLAUDE_CODE_TOOLS]
    assert chat["tools"][1]["function"]["parameters"] == CLAUDE_CODE_TOOLS[1]["input_schema"]
    assert chat["messages"][2] == {
        "role": "assistant", "content": "I'll run the failing test.",
        "tool_calls": [chat_call("toolu_01A09q90qw90lq917835lq9", "Bash",
                                 '{"command":"pytest -q tests/test_parse.py",'
                                 '"description":"Run the failing test"}')],
    }  # fmt: skip
    assert chat["messages"][3] == {
        "role": "tool", "tool_call_id": "toolu_01A09q90qw90lq917835lq9",
        "content": [text("Error: FAILED tests/test_parse.py::test_empty - ValueError",
                         cache_control=EPHEMERAL)],
    }  # fmt: skip
    assert len(chat["messages"]) == 4
    assert (chat["stream"], chat["max_tokens"], chat["temperature"]) == (True, 32000, 1)
    assert chat["thinking"] == CLAUDE_CODE_REQUEST["thinking"]
    assert chat["reasoning_effort"] == "high"
    assert (chat["user"], chat["session_id"]) == (CLAUDE_CODE_USER_ID, CLAUDE_CODE_USER_ID)
    assert "context_management" not in chat
    assert "metadata" not in chat
    assert classify(chat, TIERS).tier == HARD


def test_r_api_9_claude_code_stream_reads_in_the_sdk():
    # given: Claude Code's next turn, answered by an OpenAI-style upstream
    frames = [*text_chunks("The parser ", "rejects empty input."),
              *call_chunks(0, "call_9", "Edit", '{"file_path":"src/parse.py",',
                           '"old_string":"raise","new_string":"return []"}'),
              chunk(finish_reason="tool_calls"), *tail()]  # fmt: skip
    client = sdk_client(sse_response(run(frames)))
    # fields the SDK's typed stream() does not take go as extra body, as Claude Code's do
    untyped = ("stream", "temperature", "context_management")
    body = {key: value for key, value in CLAUDE_CODE_REQUEST.items() if key not in untyped}
    extra = {key: CLAUDE_CODE_REQUEST[key] for key in untyped[1:]}
    # when
    with client.messages.stream(**body, extra_body=extra) as stream:
        streamed_text = "".join(stream.text_stream)
        final = stream.get_final_message()
    # then
    assert streamed_text == "The parser rejects empty input."
    assert final.stop_reason == "tool_use"
    assert final.content[1].model_dump(exclude_none=True) == tool_use(
        "call_9", "Edit",
        {"file_path": "src/parse.py", "old_string": "raise", "new_string": "return []"},
    )  # fmt: skip
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens) == (40, 60)
