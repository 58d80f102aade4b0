"""OpenAI's chat completions, held to the shapes of the fields the fake knows: `check_chat`
for `/v1/chat/completions`. Null is absent, as OpenAI treats it. Unknown fields are not
refused, although OpenAI refuses them ("Unrecognized request argument supplied"):
Switchyard forwards fields it does not know to OpenAI-compatible providers on purpose, and
many such providers take fields of their own. A field is named as OpenAI names it
(`messages[0].content`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from fakeupstream.delivery import BadRequest
from fakeupstream.strict.shapes import (
    TOOL_NAME,
    Path,
    Violation,
    fail,
    field,
    json_object,
    number_between,
)

MAX_STOP_SEQUENCES = 4  # OpenAI's limit for `stop`

_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_TOOL_CHOICE_MODES = ("none", "auto", "required")


def check_chat(body: Any) -> None:
    """Raise BadRequest, in OpenAI's words, for a known field of an unacceptable shape."""
    try:
        _chat_body(body)
    except Violation as problem:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.path)
        where = where.removeprefix(".")
        article = "an" if problem.text[:1] in ("a", "e", "i", "o", "u") else "a"
        text = {
            "missing": f"Missing required parameter: '{where}'.",
            "type": f"Invalid type for '{where}': expected {article} {problem.text}.",
        }.get(problem.kind, f"Invalid value for '{where}': {problem.text}")
        raise BadRequest(text) from None


def _chat_body(body: Mapping[str, Any]) -> None:
    _chat_messages(body.get("messages"))
    has_tools = _chat_tools(body)
    _chat_tool_choice(body, has_tools)
    _response_format(body)
    for key in ("stream", "parallel_tool_calls", "logprobs"):
        field(body, key, (), "boolean", nullable=True)
    options = field(body, "stream_options", (), "object", nullable=True)
    if options is not None:
        field(options, "include_usage", ("stream_options",), "boolean", nullable=True)
    if (field(body, "n", (), "integer", nullable=True) or 1) < 1:
        fail(("n",), "must be at least 1")
    number_between(body, "temperature", 0, 2, nullable=True)
    number_between(body, "top_p", 0, 1, nullable=True)
    number_between(body, "presence_penalty", -2, 2, nullable=True)
    number_between(body, "frequency_penalty", -2, 2, nullable=True)
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or len(stop) > MAX_STOP_SEQUENCES:
            fail(("stop",), f"must be a string or an array of at most {MAX_STOP_SEQUENCES}")
        for index, sequence in enumerate(stop):
            if not isinstance(sequence, str):
                fail(("stop", index), "string", "type")


def _chat_messages(messages: Sequence[Any]) -> None:
    answerable: set[str] = set()  # tool_call ids of the last assistant turn
    pending: set[str] = set()  # those not answered yet
    for index, message in enumerate(messages):
        path: Path = ("messages", index)
        json_object(message, path)
        role = field(message, "role", path, "string", required=True)
        if role not in _CHAT_ROLES:
            fail(
                (*path, "role"),
                f"'{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'function', 'tool', and 'developer'.",
            )
        if role == "tool":
            call_id = field(message, "tool_call_id", path, "string", required=True)
            if call_id not in answerable:
                fail(
                    (*path, "role"),
                    "messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                )
            pending.discard(call_id)
        elif pending:
            _unanswered(path, pending)
        else:
            answerable = set()
        _chat_content(message, path, required=role not in ("assistant", "function"))
        if role == "assistant":
            answerable = _tool_calls(message, path)
            pending = set(answerable)
    if pending:
        _unanswered(("messages",), pending)


def _unanswered(path: Path, call_ids: set[str]) -> NoReturn:
    fail(
        path,
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {', '.join(sorted(call_ids))}",
    )


def _chat_content(message: Mapping[str, Any], path: Path, *, required: bool) -> None:
    content = message.get("content")
    if content is None:
        if required:
            fail((*path, "content"), kind="missing")
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        fail((*path, "content"), "string or array of objects", "type")
    for index, part in enumerate(content):
        where: Path = (*path, "content", index)
        json_object(part, where)
        kind = field(part, "type", where, "string", required=True)
        if kind == "text":
            field(part, "text", where, "string", required=True)
        elif kind == "image_url":
            image = field(part, "image_url", where, "object", required=True)
            field(image, "url", (*where, "image_url"), "string", required=True)


def _tool_calls(message: Mapping[str, Any], path: Path) -> set[str]:
    ids: set[str] = set()
    for index, call in enumerate(field(message, "tool_calls", path, "array", nullable=True) or []):
        where: Path = (*path, "tool_calls", index)
        json_object(call, where)
        ids.add(field(call, "id", where, "string", required=True))
        if call.get("type") != "function":
            fail((*where, "type"), "Supported values are: 'function'.")
        function = field(call, "function", where, "object", required=True)
        field(function, "name", (*where, "function"), "string", required=True)
        field(function, "arguments", (*where, "function"), "string", required=True)
    return ids


def _chat_tools(body: Mapping[str, Any]) -> bool:
    tools = field(body, "tools", (), "array", nullable=True) or []
    for index, tool in enumerate(tools):
        path: Path = ("tools", index)
        json_object(tool, path)
        if tool.get("type") != "function":
            fail((*path, "type"), "Supported values are: 'function'.")
        function = field(tool, "function", path, "object", required=True)
        where: Path = (*path, "function")
        name = field(function, "name", where, "string", required=True)
        if not TOOL_NAME.match(name):
            fail((*where, "name"), f"string does not match pattern '{TOOL_NAME.pattern}'")
        field(function, "description", where, "string", nullable=True)
        field(function, "parameters", where, "object", nullable=True)
        field(function, "strict", where, "boolean", nullable=True)
    return bool(tools)


def _chat_tool_choice(body: Mapping[str, Any], has_tools: bool) -> None:
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not has_tools:
        fail(("tool_choice",), "'tool_choice' is only allowed when 'tools' are specified.")
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICE_MODES:
            fail(
                ("tool_choice",),
                f"'{choice}'. Supported values are: 'none', 'auto', and 'required'.",
            )
        return
    json_object(choice, ("tool_choice",))
    if choice.get("type") != "function":
        fail(("tool_choice", "type"), "Supported values are: 'function'.")
    function = field(choice, "function", ("tool_choice",), "object", required=True)
    field(function, "name", ("tool_choice", "function"), "string", required=True)


def _response_format(body: Mapping[str, Any]) -> None:
    response_format = field(body, "response_format", (), "object", nullable=True)
    if response_format is None:
        return
    kind = response_format.get("type")
    if kind not in _RESPONSE_FORMATS:
        fail(
            ("response_format", "type"),
            f"'{kind}'. Supported values are: 'text', 'json_object', and 'json_schema'.",
        )
    if kind == "json_schema":
        path: Path = ("response_format",)
        spec = field(response_format, "json_schema", path, "object", required=True)
        name = field(spec, "name", (*path, "json_schema"), "string", required=True)
        if not TOOL_NAME.match(name):
            fail(
                (*path, "json_schema", "name"),
                f"string does not match pattern '{TOOL_NAME.pattern}'",
            )
        field(spec, "schema", (*path, "json_schema"), "object", nullable=True)
        field(spec, "strict", (*path, "json_schema"), "boolean", nullable=True)
