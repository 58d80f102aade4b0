"""An OpenAI request's tools -> Anthropic's, for the Anthropic adapter (`anthropic`): the
function tools and their input schemas, `tool_choice` and `parallel_tool_calls`, the tools
a history's past tool calls need declared, and the forced answer tool that carries a
`response_format` reply. Pure translation: raises `ValueError` naming the field for tools
Anthropic cannot express.
"""

from __future__ import annotations

import re
from typing import Any

from gateway.upstream.providers.anthropic_stream import ANSWER_TOOL_PREFIX, is_answer_tool

JSONObject = dict[str, Any]

MAX_TOOL_NAME_CHARS = 64  # Anthropic's (and OpenAI's) limit; tool names are [a-zA-Z0-9_-]
_TOOL_CHOICES: dict[str, JSONObject] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}
FORCED_CHOICES = frozenset({"any", "tool"})
_UNSAFE_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_ANSWER_TOOL_DESCRIPTION = "Give your final answer as this tool's input."


def translate_tools(body: JSONObject, turns: list[JSONObject]) -> JSONObject:
    """The payload's `tools` and `tool_choice` (absent when there are none) from the body's
    tools, tool_choice, parallel_tool_calls and response_format; `turns`, the translated
    conversation, names the tools its past tool calls need declared."""
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise ValueError("tools: must be an array")
    translated = [_tool(tool, i) for i, tool in enumerate(tools)]
    parallel = body.get("parallel_tool_calls")
    choice = _tool_choice(body.get("tool_choice"), parallel) if translated else None
    if not translated:
        # OpenAI takes past tool calls without `tools`; Anthropic wants every tool_use's tool
        # declared. Declared with an open schema and tool_choice none, they pass the history
        # and cannot be called, as the client offered no tools.
        translated = _history_tools(turns)
        choice = {"type": "none"} if translated else None
    answer_tool = _answer_tool(body.get("response_format"))
    if answer_tool is not None:
        translated, choice = _with_answer_tool(translated, choice, answer_tool, parallel)
    result: JSONObject = {"tools": translated} if translated else {}
    if choice is not None:
        result["tool_choice"] = choice
    return result


def _history_tools(turns: list[JSONObject]) -> list[JSONObject]:
    names = dict.fromkeys(
        block["name"]
        for turn in turns
        if isinstance(turn["content"], list)
        for block in turn["content"]
        if block["type"] == "tool_use"
    )
    return [{"name": name, "input_schema": {"type": "object"}} for name in names]


def _tool(tool: Any, index: int) -> JSONObject:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else None
        raise ValueError(f"tools[{index}]: unsupported tool type {kind!r}")
    function = tool.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError(f"tools[{index}]: function must be an object with a string name")
    if is_answer_tool(function["name"]):
        raise ValueError(
            f"tools[{index}]: names starting with {ANSWER_TOOL_PREFIX!r} are reserved "
            "for response_format on Anthropic upstreams"
        )
    # `strict` is not sent: strict tool use exists only on newer Claude models.
    schema = _object_schema(function.get("parameters"), f"tools[{index}].function.parameters")
    translated: JSONObject = {"name": function["name"], "input_schema": schema}
    if function.get("description"):
        translated["description"] = function["description"]
    return translated


def _object_schema(schema: Any, where: str) -> JSONObject:
    """A tool's input schema: Anthropic wants `type: object` at the root, always stated."""
    if not schema:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError(f"{where}: Anthropic tool input must be an object schema")
    return {**schema, "type": "object"}


def _tool_choice(choice: Any, parallel: bool | None) -> JSONObject | None:
    if choice is None:
        # Only parallel_tool_calls=false needs an explicit choice; "auto" is the default.
        translated = {"type": "auto"} if parallel is False else None
    elif isinstance(choice, str) and choice in _TOOL_CHOICES:
        translated = dict(_TOOL_CHOICES[choice])
    elif isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError("tool_choice: function must be an object with a string name")
        translated = {"type": "tool", "name": function["name"]}
    else:
        raise ValueError(f"tool_choice: unsupported value {choice!r}")
    if parallel is False and translated is not None and translated["type"] != "none":
        translated["disable_parallel_tool_use"] = True
    return translated


def _answer_tool(response_format: Any) -> JSONObject | None:
    """The forced tool that carries a `response_format` answer, or None for plain text.

    Anthropic has no JSON mode and, on most models, no structured outputs; a tool whose
    input schema is the format is how every Claude model answers in a schema. Its input
    comes back as the message content (parse_response, StreamTranslator)."""
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":  # any JSON object will do
        return _named_answer_tool("json_object", {"type": "object"}, None)
    if kind != "json_schema":
        raise ValueError(f"response_format: unsupported type {kind!r}")
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict):
        raise ValueError("response_format.json_schema: must be an object")
    # `strict` is not sent: the forced tool gives schema-shaped input on every model,
    # Anthropic's strict tool use (a guarantee) only on newer ones.
    schema = _object_schema(spec.get("schema"), "response_format.json_schema.schema")
    return _named_answer_tool(str(spec.get("name") or "response"), schema, spec.get("description"))


def _named_answer_tool(name: str, schema: JSONObject, description: Any) -> JSONObject:
    safe_name = _UNSAFE_NAME_CHARS.sub("_", name)
    about = f"{_ANSWER_TOOL_DESCRIPTION} {description}" if description else _ANSWER_TOOL_DESCRIPTION
    return {
        "name": (ANSWER_TOOL_PREFIX + safe_name)[:MAX_TOOL_NAME_CHARS],
        "description": about,
        "input_schema": schema,
    }


def _with_answer_tool(
    tools: list[JSONObject], choice: JSONObject | None, answer: JSONObject, parallel: Any
) -> tuple[list[JSONObject], JSONObject]:
    """Tools and tool_choice for a response_format request, with the client's own tools
    kept beside the answer tool (as OpenAI allows both): refusing would fail every agent
    that gives tools and wants a structured final answer."""
    if choice is not None and choice["type"] in FORCED_CHOICES:
        # `required` or a named function: this turn must call the client's tools, and the
        # answer tool would be a way around that.
        return tools, choice
    if tools and (choice is None or choice["type"] == "auto"):
        # A client tool call or the answer, nothing else: the answer comes only through
        # the tool. With parallel calls allowed, both may come in one turn.
        forced: JSONObject = {"type": "any"}
        if parallel is False:
            forced["disable_parallel_tool_use"] = True
    else:  # no client tools, or tool_choice `none`: the answer is the only way to reply
        forced = {"type": "tool", "name": answer["name"], "disable_parallel_tool_use": True}
    return [*tools, answer], forced
