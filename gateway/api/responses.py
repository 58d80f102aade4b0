"""`POST /v1/responses`: the Responses API's `input` form mapped onto the chat path
(SPEC R-API-1). The request becomes a chat completion (`to_chat_body`: input items in
`gateway.api.responses_items`, flat function tools, `tool_choice` and `text.format` here);
the answer is shaped back into a `response` object that echoes the request's tools, tool
choice and text settings. Routing, failover and the trace are the chat path's own.

Everything the chat path cannot express is refused with a 400 naming the Responses field
(`tools[1]`, `max_output_tokens`, `previous_response_id`), before any upstream call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpResponseBase

from gateway.api.chat import chat_stream_frames
from gateway.api.responses_items import NOT_STORED, to_messages
from gateway.api.responses_stream import (
    ResponsesStream,
    finished_state,
    response_usage,
    translate,
)
from gateway.api.wire import json_response, sse_response
from gateway.errors import invalid
from gateway.request_path.caller import Caller
from gateway.request_path.operation import Operation, Parsed, Served
from gateway.request_path.params import BadParam, Checker, boolean, integer
from gateway.request_path.parse import require_bool, validate_chat
from gateway.request_path.record import switchyard_block

PASSED_THROUGH = (
    "temperature",
    "stream",
    "top_p",
    "user",
    "metadata",
    "parallel_tool_calls",
    "prompt_cache_key",
    "models",
    "provider",
    "routing",
    "residency",
    "session_id",
)
# Request fields that name state kept on OpenAI's side. Ignoring them would answer without
# the earlier context, so they are refused.
STORED_STATE = ("previous_response_id", "conversation")
TOOL_CHOICE_MODES = ("none", "auto", "required")
VERBOSITIES = ("low", "medium", "high")
# Tools that run on OpenAI's servers (web search, file search over vector stores, a
# sandbox, a browser, image generation, remote MCP servers). No upstream behind Switchyard
# runs them on its behalf, and only `function` tools have a chat equivalent.
BUILT_IN_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "web_search_2025_08_26",
        "web_search_preview_2025_03_11",
        "file_search",
        "computer",
        "computer_use_preview",
        "code_interpreter",
        "image_generation",
        "mcp",
        "local_shell",
        "shell",
        "apply_patch",
        "custom",
        "namespace",
        "tool_search",
    }
)
MAX_OUTPUT_TOKENS = integer(minimum=1)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    body: dict[str, Any]  # the chat-completions body to validate and route
    echo: dict[str, Any]  # request settings the response object reports back


def to_chat_body(body: dict[str, Any]) -> ChatRequest:
    """A Responses request as a chat-completions body, or a 400 naming the Responses
    field. `store` is accepted and ignored: the SDK sends it (true by default) and nothing
    is stored either way; the response says `"store": false`."""
    for name in STORED_STATE:
        if body.get(name) is not None:
            raise invalid(f"`{name}`: {NOT_STORED}", param=name)
    chat: dict[str, Any] = {
        "model": body.get("model"),
        "messages": to_messages(body.get("instructions"), body.get("input")),
    }
    if body.get("max_output_tokens") is not None:
        _check(MAX_OUTPUT_TOKENS, body["max_output_tokens"], "max_output_tokens")
        chat["max_tokens"] = body["max_output_tokens"]
    if body.get("parallel_tool_calls") is not None:
        _check(boolean, body["parallel_tool_calls"], "parallel_tool_calls")
    for name in PASSED_THROUGH:
        if name in body:
            chat[name] = body[name]
    echo = _echo_defaults(body)
    if body.get("tools") is not None:
        chat["tools"] = [_chat_tool(tool, f"tools[{i}]") for i, tool in enumerate(_tools(body))]
        echo["tools"] = [_flat_tool(tool) for tool in chat["tools"]]
    if body.get("tool_choice") is not None:
        chat["tool_choice"], echo["tool_choice"] = _tool_choice(body["tool_choice"])
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        # chat's name for it, which the smart tiers read (R-TIER-2: effort >= medium is hard)
        chat["reasoning_effort"] = reasoning["effort"]
    if body.get("text") is not None:
        chat.update(_text_settings(body["text"]))
        echo["text"] = {**body["text"], "format": body["text"].get("format") or {"type": "text"}}
    return ChatRequest(body=chat, echo=echo)


def _echo_defaults(body: dict[str, Any]) -> dict[str, Any]:
    """What the response reports of the request, before tools and text are translated."""
    return {
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata"),
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "user": body.get("user"),
        "store": False,
        "tools": [],
        "tool_choice": "auto",
        "text": {"format": {"type": "text"}},
    }


def _check(checker: Checker, value: Any, param: str) -> None:
    try:
        checker(value, param)
    except BadParam as exc:
        raise invalid(str(exc), param=exc.param) from None


def _tools(body: dict[str, Any]) -> list[Any]:
    if not isinstance(body["tools"], list):
        raise invalid("`tools` must be an array", param="tools")
    return body["tools"]


def _chat_tool(tool: Any, param: str) -> dict[str, Any]:
    """A flat Responses function tool (`{type, name, description, parameters, strict}`) as
    a chat tool (`{type, function: {…}}`). The chat form itself is accepted too: clients
    used it here before flat tools were translated, and it is unambiguous."""
    if not isinstance(tool, dict):
        raise invalid(f"`{param}` must be an object", param=param)
    kind = tool.get("type")
    if kind != "function":
        if not isinstance(kind, str):
            raise invalid(f"`{param}.type` must be a string", param=f"{param}.type")
        if kind in BUILT_IN_TOOLS:
            message = (
                f"`{param}`: the built-in tool {kind!r} runs on OpenAI's servers and "
                "Switchyard cannot serve it; declare a function tool instead"
            )
        else:
            message = f"`{param}`: unsupported tool type {kind!r}; only function tools are served"
        raise invalid(message, param=param)
    nested = tool.get("function")
    source, path = (nested, f"{param}.function") if isinstance(nested, dict) else (tool, param)
    name = source.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(f"`{path}.name` must be a non-empty string", param=f"{path}.name")
    function: dict[str, Any] = {"name": name}
    for field, kinds, expected in (
        ("description", str, "a string"),
        ("parameters", dict, "an object"),
        ("strict", bool, "a boolean"),
    ):
        value = source.get(field)
        if value is None:
            continue
        if not isinstance(value, kinds):
            raise invalid(f"`{path}.{field}` must be {expected}", param=f"{path}.{field}")
        function[field] = value
    return {"type": "function", "function": function}


def _flat_tool(chat_tool: dict[str, Any]) -> dict[str, Any]:
    function = chat_tool["function"]
    return {
        "type": "function",
        "name": function["name"],
        "description": function.get("description"),
        "parameters": function.get("parameters"),
        "strict": function.get("strict"),
    }


def _tool_choice(choice: Any) -> tuple[Any, Any]:
    """(chat `tool_choice`, the Responses form to echo)."""
    if isinstance(choice, str) and choice in TOOL_CHOICE_MODES:
        return choice, choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "function":
        nested = choice.get("function")
        name = nested.get("name") if isinstance(nested, dict) else choice.get("name")
        if not isinstance(name, str) or not name:
            raise invalid("`tool_choice.name` must be a non-empty string", "tool_choice.name")
        return {"type": "function", "function": {"name": name}}, {"type": "function", "name": name}
    if kind is not None:
        raise invalid(
            f'`tool_choice`: {kind!r} cannot be served; use "none", "auto", "required" '
            'or {"type": "function", "name": …}',
            param="tool_choice",
        )
    raise invalid(
        '`tool_choice` must be "none", "auto", "required" or {"type": "function", "name": …}',
        param="tool_choice",
    )


def _text_settings(text: Any) -> dict[str, Any]:
    """`text.format` as chat `response_format`, `text.verbosity` as chat `verbosity`."""
    if not isinstance(text, dict):
        raise invalid("`text` must be an object", param="text")
    chat: dict[str, Any] = {}
    if text.get("verbosity") is not None:
        if text["verbosity"] not in VERBOSITIES:
            raise invalid('`text.verbosity` must be "low", "medium" or "high"', "text.verbosity")
        chat["verbosity"] = text["verbosity"]
    form = text.get("format")
    if form is None:
        return chat
    kind = form.get("type") if isinstance(form, dict) else None
    if kind == "json_schema":
        chat["response_format"] = {"type": "json_schema", "json_schema": _json_schema(form)}
    elif kind == "json_object":
        chat["response_format"] = {"type": "json_object"}
    elif kind != "text":
        raise invalid(
            '`text.format.type` must be "text", "json_object" or "json_schema"',
            param="text.format.type",
        )
    return chat


def _json_schema(form: dict[str, Any]) -> dict[str, Any]:
    name, schema = form.get("name"), form.get("schema")
    if not isinstance(name, str) or not name:
        raise invalid("`text.format.name` must be a non-empty string", "text.format.name")
    if not isinstance(schema, dict):
        raise invalid("`text.format.schema` must be an object", param="text.format.schema")
    json_schema: dict[str, Any] = {"name": name, "schema": schema}
    for field, kinds, expected in (("strict", bool, "a boolean"), ("description", str, "a string")):
        value = form.get(field)
        if value is None:
            continue
        if not isinstance(value, kinds):
            param = f"text.format.{field}"
            raise invalid(f"`{param}` must be {expected}", param=param)
        json_schema[field] = value
    return json_schema


def response_envelope(caller: Caller, model: str | None, echo: dict[str, Any]) -> dict[str, Any]:
    """The fields of a `response` object that do not depend on the answer."""
    return {
        "id": f"resp_{caller.trace_id.hex}",
        "object": "response",
        "created_at": caller.created,
        "model": model,
        "error": None,
        **echo,
    }


def to_response(chat: dict[str, Any], caller: Caller, echo: dict[str, Any]) -> dict[str, Any]:
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append(
            {
                "type": "message",
                "id": f"msg_{caller.trace_id.hex}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": message["content"], "annotations": []}],
            }
        )
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call.get('id', '')}",
                "call_id": call.get("id", ""),
                "name": function.get("name", ""),
                "arguments": function.get("arguments", ""),
                "status": "completed",
            }
        )
    status, incomplete = finished_state(choice.get("finish_reason"))
    return {
        **response_envelope(caller, chat.get("model"), echo),
        "status": status,
        "incomplete_details": incomplete,
        "output": output,
        "usage": response_usage(chat.get("usage") or {}),
        "switchyard": chat.get("switchyard"),
    }


def parse_responses(body: dict[str, Any]) -> Parsed:
    stream = require_bool(body, "stream")
    translated = to_chat_body(body)
    validate_chat(translated.body)
    return Parsed(body=translated.body, stream=stream, echo=translated.echo)


def render_responses(served: Served) -> HttpResponseBase:
    caller, outcome, finish = served.caller, served.outcome, served.finish
    assert outcome is not None
    assert finish is not None
    assert outcome.target is not None
    echo = served.parsed.echo
    if outcome.opened is not None:
        model = outcome.opened.target.endpoint.model
        shaper = ResponsesStream(
            envelope=response_envelope(caller, model, echo),
            message_id=f"msg_{caller.trace_id.hex}",
        )
        stream = chat_stream_frames(served, outcome.opened, finish)
        stream.frames = translate(stream.frames, shaper)
        return sse_response(stream)
    chat = outcome.response or {}
    usage = chat.get("usage")
    chat["switchyard"] = switchyard_block(caller, served.record, outcome.target, usage)
    finish(status=200, target=outcome.target, usage=usage)
    return json_response(to_response(chat, caller, echo))


RESPONSES = Operation("responses", parse=parse_responses, render=render_responses)
