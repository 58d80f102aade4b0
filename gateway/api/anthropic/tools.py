"""The Anthropic Messages API's `tools` and `tool_choice` as chat-completions function tools
and tool choice (SPEC R-API-9). Custom tools become function tools (`input_schema` is the
function's `parameters`, `cache_control` stays on the tool for an Anthropic upstream);
Anthropic's own tools, which run on its servers or are built into Claude, are refused, as
the Responses translation refuses OpenAI's built-in tools. Pure: no Django, no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.api.anthropic.blocks import refuse

Handling = Literal["translate", "drop", "refuse"]

# Anthropic tool_choice types with a chat string of the same meaning; "tool" names one.
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
SERVER_TOOL = (
    "is one of Anthropic's own tools (run on its servers or built into Claude), "
    "which other providers cannot serve; declare a custom tool with an "
    "input_schema instead"
)
# Custom tool fields. "drop": `strict` is a guarantee each vendor implements over a different
# schema subset (OpenAI refuses strict schemas with optional properties, which Anthropic
# takes); examples and eager streaming are hints; a deferred tool is declared in full
# instead (more context, the same tools). "refuse" unless neutral: callers other than the
# model itself are Anthropic's code execution.
TOOL_FIELDS: dict[str, Handling] = {
    "type": "translate",
    "name": "translate",
    "description": "translate",
    "input_schema": "translate",
    "cache_control": "translate",
    "strict": "drop",
    "input_examples": "drop",
    "eager_input_streaming": "drop",
    "defer_loading": "drop",
    "allowed_callers": "refuse",
}
_TOOL_NEUTRAL_VALUES: dict[str, Any] = {"allowed_callers": ["direct"]}
_TOOL_REFUSALS = {
    "allowed_callers": 'only the model itself (["direct"]) can call tools through Switchyard',
}


def tools_and_choice(body: dict[str, Any]) -> dict[str, Any]:
    """chat `tools`, `tool_choice` and `parallel_tool_calls` from the Messages request.
    Raises MessagesRequestError naming `tools[i]…` or `tool_choice…`."""
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise refuse("tools", "must be an array")
    chat: dict[str, Any] = {}
    if tools:
        chat["tools"] = [_tool(tool, f"tools[{index}]") for index, tool in enumerate(tools)]
    choice = body.get("tool_choice")
    if choice is not None:
        chat.update(_tool_choice(choice, has_tools=bool(tools)))
    return chat


def _tool(tool: Any, param: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise refuse(param, "must be an object")
    kind = tool.get("type")
    if kind not in (None, "custom"):
        raise refuse(param, f"{kind!r} {SERVER_TOOL}")
    for field, handling in TOOL_FIELDS.items():
        value = tool.get(field)
        if handling == "refuse" and value is not None and value != _TOOL_NEUTRAL_VALUES[field]:
            raise refuse(f"{param}.{field}", _TOOL_REFUSALS[field])
    name, schema = tool.get("name"), tool.get("input_schema")
    if not isinstance(name, str) or not name:
        raise refuse(f"{param}.name", "must be a non-empty string")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise refuse(f"{param}.input_schema", 'must be a JSON schema with "type": "object"')
    function: dict[str, Any] = {"name": name, "parameters": schema}
    description = tool.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise refuse(f"{param}.description", "must be a string")
        function["description"] = description
    chat_tool: dict[str, Any] = {"type": "function", "function": function}
    marker = tool.get("cache_control")
    if marker is not None:
        if not isinstance(marker, dict):
            raise refuse(f"{param}.cache_control", "must be an object")
        chat_tool["cache_control"] = marker
    return chat_tool


def _tool_choice(choice: Any, *, has_tools: bool) -> dict[str, Any]:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or kind not in (*_CHOICES, "tool"):
        raise refuse("tool_choice.type", 'must be "auto", "any", "tool" or "none"')
    if not has_tools:
        if kind in ("any", "tool"):
            raise refuse("tool_choice", f"{kind!r} needs `tools` to choose from")
        return {}  # "auto" or "none" with nothing to call: chat refuses a choice without tools
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise refuse("tool_choice.name", "must be a non-empty string")
        chat: dict[str, Any] = {"tool_choice": {"type": "function", "function": {"name": name}}}
    else:
        chat = {"tool_choice": _CHOICES[kind]}
    parallel = choice.get("disable_parallel_tool_use")
    if parallel is not None and not isinstance(parallel, bool):
        raise refuse("tool_choice.disable_parallel_tool_use", "must be a boolean")
    if parallel and kind != "none":
        chat["parallel_tool_calls"] = False
    return chat
