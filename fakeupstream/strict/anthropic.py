"""Anthropic's Messages API, held to its schema: `check_messages` for `/v1/messages`,
`check_count_tokens` for `/v1/messages/count_tokens` (the prompt's fields only). Required
fields, types and ranges, content blocks of known types, tools and `tool_choice` in
Anthropic's shape, tool_use/tool_result pairing, thinking's constraints, and no unknown
field in any object it checks ("Extra inputs are not permitted"); a field is named as
Anthropic names it (`messages.0.content`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

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

MIN_THINKING_BUDGET = 1024
MESSAGES_FIELDS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "metadata",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "tools",
        "tool_choice",
        "thinking",
        "service_tier",
        "container",
        "mcp_servers",
        "context_management",
        "output_config",
        "cache_control",
        "inference_geo",
        "speed",
    }
)
# Anthropic's count endpoint takes the prompt's fields only: a generation setting such as
# `max_tokens`, `stream` or `temperature` is an extra input there.
COUNT_TOKENS_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "cache_control",
        "context_management",
        "mcp_servers",
        "speed",
    }
)
_BLOCK_TYPES = frozenset(
    {
        "text",
        "image",
        "document",
        "search_result",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "tool_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "container_upload",
        "mcp_tool_use",
        "mcp_tool_result",
    }
)
_TOOL_RESULT_BLOCK_TYPES = frozenset({"text", "image", "document", "search_result"})
_CUSTOM_TOOL_FIELDS = frozenset(
    {
        "type",
        "name",
        "description",
        "input_schema",
        "cache_control",
        "strict",
        "input_examples",
        "eager_input_streaming",
        "defer_loading",
        "allowed_callers",
    }
)
_SERVER_TOOL_TYPE = re.compile(r"^[a-z_]+_\d{8}$")  # web_search_20250305, bash_20250124...
_TOOL_CHOICE_FIELDS = {
    "auto": {"type", "disable_parallel_tool_use"},
    "any": {"type", "disable_parallel_tool_use"},
    "tool": {"type", "name", "disable_parallel_tool_use"},
    "none": {"type"},
}
_IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_ANTHROPIC_TYPE_WORDS = {"object": "a valid dictionary", "array": "a valid list"}


def check_messages(body: Any) -> None:
    """Raise BadRequest, in Anthropic's words, for a body the Messages API refuses."""
    _in_anthropic_words(_messages_body, body)


def check_count_tokens(body: Any) -> None:
    """Raise BadRequest, in Anthropic's words, for a body its count endpoint refuses."""
    _in_anthropic_words(_count_tokens_body, body)


def _in_anthropic_words(check: Callable[[Any], None], body: Any) -> None:
    try:
        check(body)
    except Violation as problem:
        where = ".".join(str(part) for part in problem.path)
        expected = _ANTHROPIC_TYPE_WORDS.get(problem.text, f"a valid {problem.text}")
        text = {
            "missing": "Field required",
            "extra": "Extra inputs are not permitted",
            "type": f"Input should be {expected}",
        }.get(problem.kind, problem.text)
        raise BadRequest(f"{where}: {text}" if where else text) from None


def _messages_body(body: Any) -> None:
    json_object(body, (), MESSAGES_FIELDS)
    if not field(body, "model", (), "string", required=True):
        fail(("model",), "must not be empty")
    max_tokens = field(body, "max_tokens", (), "integer", required=True)
    if max_tokens < 1:
        fail(("max_tokens",), "Input should be greater than or equal to 1")
    _system(body)
    number_between(body, "temperature", 0, 1)
    number_between(body, "top_p", 0, 1)
    if (field(body, "top_k", (), "integer") or 0) < 0:
        fail(("top_k",), "Input should be greater than or equal to 0")
    field(body, "stream", (), "boolean")
    for index, stop in enumerate(field(body, "stop_sequences", (), "array") or []):
        if not isinstance(stop, str):
            fail(("stop_sequences", index), "string", "type")
    metadata = field(body, "metadata", (), "object")
    if metadata is not None:
        json_object(metadata, ("metadata",), {"user_id"})
        field(metadata, "user_id", ("metadata",), "string", nullable=True)
    if body.get("service_tier", "auto") not in ("auto", "standard_only"):
        fail(("service_tier",), "Input should be 'auto' or 'standard_only'")
    names = _tools(body)
    _tool_choice(body, names)
    _thinking(body, max_tokens)
    messages = field(body, "messages", (), "array", required=True)
    _conversation(messages, has_tools=bool(names))
    _thinking_kept(body, messages)


def _thinking_kept(body: Mapping[str, Any], messages: list[Any]) -> None:
    """Mid tool loop (the last turn returns tool results) with thinking on, the assistant
    turn that called the tools must start with its thinking block, sent back as it came:
    what a gateway that translates through chat loses (Anthropic's extended-thinking docs,
    "preserving thinking blocks")."""
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
        return
    last = messages[-1] if messages else {}
    content = last.get("content")
    if (
        last.get("role") != "user"
        or not isinstance(content, list)
        or not any(
            isinstance(block, Mapping) and block.get("type") == "tool_result" for block in content
        )
    ):
        return
    index = len(messages) - 2
    blocks = messages[index].get("content") if index >= 0 else None
    first = blocks[0].get("type") if isinstance(blocks, list) and blocks else "text"
    if first not in ("thinking", "redacted_thinking"):
        fail(
            ("messages", index, "content", 0, "type"),
            f"Expected `thinking` or `redacted_thinking`, but found `{first}`. When "
            "`thinking` is enabled, a final `assistant` message must start with a thinking "
            "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
            "recommend you include thinking blocks from previous turns. To avoid this "
            "requirement, disable `thinking`.",
        )


def _count_tokens_body(body: Any) -> None:
    json_object(body, (), COUNT_TOKENS_FIELDS)
    if not field(body, "model", (), "string", required=True):
        fail(("model",), "must not be empty")
    _system(body)
    names = _tools(body)
    _tool_choice(body, names)
    _thinking(body, None)
    _conversation(field(body, "messages", (), "array", required=True), has_tools=bool(names))


def _system(body: Mapping[str, Any]) -> None:
    system = body.get("system")
    if isinstance(system, list):
        for index, block in enumerate(system):
            if _block(block, ("system", index)) != "text":
                fail(("system", index, "type"), "Input should be 'text'")
    elif "system" in body and not isinstance(system, str):
        fail(("system",), "string", "type")


def _conversation(messages: list[Any], *, has_tools: bool) -> None:
    if not messages:
        fail(("messages",), "at least one message is required")
    previous_role, open_uses = None, set[str]()
    for index, message in enumerate(messages):
        path: Path = ("messages", index)
        json_object(message, path, {"role", "content"})
        role = field(message, "role", path, "string", required=True)
        if role not in ("user", "assistant"):
            fail((*path, "role"), "Input should be 'user' or 'assistant'")
        if previous_role is None and role != "user":
            fail(("messages",), 'first message must use the "user" role')
        if role == previous_role:
            fail(
                ("messages",),
                f'roles must alternate between "user" and "assistant", '
                f'but found multiple "{role}" roles in a row',
            )
        is_final_assistant = role == "assistant" and index == len(messages) - 1
        blocks = _message_blocks(message, path, is_final_assistant)
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [(j, b) for j, b in enumerate(blocks) if b["type"] == "tool_result"]
        if (uses or results) and not has_tools:
            fail(
                ("tools",),
                "Requests which include `tool_use` or `tool_result` blocks must define tools.",
            )
        if (role == "user" and uses) or (role == "assistant" and results):
            fail(path, f"{role} messages may not hold {'tool_use' if uses else 'tool_result'}")
        _check_results(path, results, open_uses)
        open_uses = set(uses)
        previous_role = role


def _check_results(path: Path, results: list[Any], open_uses: set[str]) -> None:
    """A user turn answers every tool_use of the turn before, tool_result blocks first."""
    for position, (j, block) in enumerate(results):
        if j != position:
            fail((*path, "content", j), "tool_result blocks must come first in the content")
        if block["tool_use_id"] not in open_uses:
            fail(
                (*path, "content", j),
                f"unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {block['tool_use_id']}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message.",
            )
    missing = open_uses - {block["tool_use_id"] for _j, block in results}
    if missing:
        fail(
            path,
            f"`tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(sorted(missing))}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message.",
        )


def _message_blocks(message: Mapping[str, Any], path: Path, final_assistant: bool) -> list[Any]:
    content = message.get("content")
    if content is None:
        fail((*path, "content"), kind="missing")
    if not content and not final_assistant:
        fail(
            path,
            "all messages must have non-empty content except for the optional final "
            "assistant message",
        )
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        fail((*path, "content"), "array", "type")
    for index, block in enumerate(content):
        _block(block, (*path, "content", index))
    return content


def _block(block: Any, path: Path, types: frozenset[str] = _BLOCK_TYPES) -> str:
    """Check one content block; returns its type."""
    json_object(block, path)
    kind = field(block, "type", path, "string", required=True)
    if kind not in types:
        expected = ", ".join(f"'{t}'" for t in sorted(types))
        fail(
            (*path, "type"),
            f"Input tag '{kind}' found using 'type' does not match any of "
            f"the expected tags: {expected}",
        )
    if kind == "text":
        json_object(block, path, {"type", "text", "cache_control", "citations"})
        if not field(block, "text", path, "string", required=True):
            fail(path, "text content blocks must be non-empty")
    elif kind == "image":
        json_object(block, path, {"type", "source", "cache_control"})
        _image_source(field(block, "source", path, "object", required=True), (*path, "source"))
    elif kind == "tool_use":
        json_object(block, path, {"type", "id", "name", "input", "cache_control", "caller"})
        field(block, "id", path, "string", required=True)
        field(block, "name", path, "string", required=True)
        field(block, "input", path, "object", required=True)
    elif kind == "tool_result":
        json_object(block, path, {"type", "tool_use_id", "content", "is_error", "cache_control"})
        field(block, "tool_use_id", path, "string", required=True)
        field(block, "is_error", path, "boolean")
        content = block.get("content")
        if isinstance(content, list):
            for index, part in enumerate(content):
                _block(part, (*path, "content", index), _TOOL_RESULT_BLOCK_TYPES)
        elif "content" in block and not isinstance(content, str):
            fail((*path, "content"), "string", "type")
    return kind


def _image_source(source: Mapping[str, Any], path: Path) -> None:
    kind = source.get("type")
    if kind == "base64":
        json_object(source, path, {"type", "media_type", "data"})
        if source.get("media_type") not in _IMAGE_MEDIA_TYPES:
            fail(
                (*path, "media_type"),
                "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
            )
        field(source, "data", path, "string", required=True)
    elif kind == "url":
        json_object(source, path, {"type", "url"})
        field(source, "url", path, "string", required=True)
    elif kind == "file":
        json_object(source, path, {"type", "file_id"})
        field(source, "file_id", path, "string", required=True)
    else:
        fail((*path, "type"), "Input should be 'base64', 'url' or 'file'")


def _tools(body: Mapping[str, Any]) -> set[str]:
    """Check `tools`; returns the declared names."""
    names: set[str] = set()
    for index, tool in enumerate(field(body, "tools", (), "array") or []):
        path: Path = ("tools", index)
        json_object(tool, path)
        kind = tool.get("type")
        if kind not in (None, "custom"):  # a server tool: Anthropic knows each by its type
            if not isinstance(kind, str) or not _SERVER_TOOL_TYPE.match(kind):
                fail((*path, "type"), f"unknown tool type {kind!r}")
        else:
            json_object(tool, path, _CUSTOM_TOOL_FIELDS)
            field(tool, "description", path, "string")
            field(tool, "strict", path, "boolean")
            schema = field(tool, "input_schema", path, "object", required=True)
            if schema.get("type") != "object":
                fail((*path, "input_schema", "type"), "Input should be 'object'")
        name = field(tool, "name", path, "string", required=True)
        if not TOOL_NAME.match(name):
            fail((*path, "name"), f"String should match pattern '{TOOL_NAME.pattern}'")
        if name in names:
            fail(("tools",), "Tool names must be unique.")
        names.add(name)
    return names


def _tool_choice(body: Mapping[str, Any], names: set[str]) -> None:
    choice = field(body, "tool_choice", (), "object")
    if choice is None:
        return
    fields = _TOOL_CHOICE_FIELDS.get(choice.get("type"))
    if fields is None:
        fail(("tool_choice", "type"), "Input should be 'auto', 'any', 'tool' or 'none'")
    json_object(choice, ("tool_choice",), fields)
    field(choice, "disable_parallel_tool_use", ("tool_choice",), "boolean")
    if choice["type"] == "tool":
        name = field(choice, "name", ("tool_choice",), "string", required=True)
        if name not in names:
            fail(("tool_choice", "name"), f"Tool '{name}' not found in provided tools")


def _thinking(body: Mapping[str, Any], max_tokens: int | None) -> None:
    """`max_tokens` None: a count, which has none for the budget to stay below."""
    thinking = field(body, "thinking", (), "object")
    if thinking is None or thinking.get("type") == "disabled":
        return
    if thinking.get("type") == "enabled":
        json_object(thinking, ("thinking",), {"type", "budget_tokens", "display"})
        budget = field(thinking, "budget_tokens", ("thinking",), "integer", required=True)
        if budget < MIN_THINKING_BUDGET:
            fail(("thinking", "budget_tokens"), "Input should be greater than or equal to 1024")
        if max_tokens is not None and budget >= max_tokens:
            fail(("max_tokens",), "`max_tokens` must be greater than `thinking.budget_tokens`")
    elif thinking.get("type") != "adaptive":
        fail(("thinking", "type"), "Input should be 'enabled', 'disabled' or 'adaptive'")
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        fail((), "Thinking may not be enabled when tool_choice forces tool use.")
    if body.get("temperature") not in (None, 1):
        fail(("temperature",), "may only be set to 1 when thinking is enabled")
    if body.get("top_p") is not None and body["top_p"] < 0.95:
        fail(("top_p",), "must be at least 0.95 when thinking is enabled")
