"""Request validation: the fake refuses what the real APIs refuse, so that a translation bug
in the gateway fails a test instead of being absorbed by a lenient fake.

`check_messages` holds a `/v1/messages` body to Anthropic's Messages schema: required
fields, types and ranges, content blocks of known types, tools and `tool_choice` in
Anthropic's shape, tool_use/tool_result pairing, thinking's constraints, and no unknown
field in any object it checks (Anthropic: "Extra inputs are not permitted").
`check_count_tokens` holds a `/v1/messages/count_tokens` body to the same rules for the
fields that endpoint takes: no `max_tokens` (nor any other generation setting).

`check_chat` holds a `/v1/chat/completions` body to the shapes of the fields it knows. It
does not refuse unknown fields, although OpenAI does ("Unrecognized request argument
supplied"): Switchyard forwards fields it does not know to OpenAI-compatible providers on
purpose, and many such providers take fields of their own.

Both raise `BadRequest` naming the field in the provider's words (Anthropic `messages.0.
content`, OpenAI `messages[0].content`); the route answers 400 in the provider's shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from fakeupstream.delivery import BadRequest

Path = tuple[str | int, ...]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # both APIs
MIN_THINKING_BUDGET = 1024
MAX_STOP_SEQUENCES = 4  # OpenAI's limit for `stop`

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
_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_TOOL_CHOICE_MODES = ("none", "auto", "required")
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_ANTHROPIC_TYPE_WORDS = {"object": "a valid dictionary", "array": "a valid list"}


class _Violation(Exception):
    def __init__(self, path: Path, text: str, kind: str) -> None:
        super().__init__(text)
        self.path, self.text, self.kind = path, text, kind


def _fail(path: Path, text: str = "", kind: str = "value") -> NoReturn:
    """kind: `value` (text says what is wrong), `type` (text names the expected type),
    `missing` or `extra`."""
    raise _Violation(path, text, kind)


def check_messages(body: Any) -> None:
    """Raise BadRequest, in Anthropic's words, for a body the Messages API refuses."""
    _in_anthropic_words(_messages_body, body)


def check_count_tokens(body: Any) -> None:
    """Raise BadRequest, in Anthropic's words, for a body its count endpoint refuses."""
    _in_anthropic_words(_count_tokens_body, body)


def _in_anthropic_words(check: Callable[[Any], None], body: Any) -> None:
    try:
        check(body)
    except _Violation as problem:
        where = ".".join(str(part) for part in problem.path)
        expected = _ANTHROPIC_TYPE_WORDS.get(problem.text, f"a valid {problem.text}")
        text = {
            "missing": "Field required",
            "extra": "Extra inputs are not permitted",
            "type": f"Input should be {expected}",
        }.get(problem.kind, problem.text)
        raise BadRequest(f"{where}: {text}" if where else text) from None


def check_chat(body: Any) -> None:
    """Raise BadRequest, in OpenAI's words, for a known field of an unacceptable shape."""
    try:
        _chat_body(body)
    except _Violation as problem:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.path)
        where = where.removeprefix(".")
        article = "an" if problem.text[:1] in ("a", "e", "i", "o", "u") else "a"
        text = {
            "missing": f"Missing required parameter: '{where}'.",
            "type": f"Invalid type for '{where}': expected {article} {problem.text}.",
        }.get(problem.kind, f"Invalid value for '{where}': {problem.text}")
        raise BadRequest(text) from None


def _get(
    obj: Mapping[str, Any],
    key: str,
    path: Path,
    expected: str,
    *,
    required: bool = False,
    nullable: bool = False,
) -> Any:
    """obj[key] when it has the expected JSON type; None when absent (and allowed)."""
    value = obj.get(key)
    if value is None:
        if required:
            _fail((*path, key), kind="missing")
        if key in obj and not nullable:
            _fail((*path, key), expected, "type")
        return None
    if not _TYPES[expected](value):
        _fail((*path, key), expected, "type")
    return value


def _object(value: Any, path: Path, allowed: frozenset[str] | set[str] | None = None) -> Any:
    if not isinstance(value, Mapping):
        _fail(path, "object", "type")
    for key in value if allowed is not None else ():
        if key not in allowed:
            _fail((*path, key), kind="extra")
    return value


def _number_between(
    obj: Mapping[str, Any], key: str, low: float, high: float, *, nullable: bool = False
) -> None:
    value = _get(obj, key, (), "number", nullable=nullable)
    if value is not None and not low <= value <= high:
        _fail((key,), f"must be between {low} and {high}")


# Anthropic Messages.


def _messages_body(body: Any) -> None:
    _object(body, (), MESSAGES_FIELDS)
    if not _get(body, "model", (), "string", required=True):
        _fail(("model",), "must not be empty")
    max_tokens = _get(body, "max_tokens", (), "integer", required=True)
    if max_tokens < 1:
        _fail(("max_tokens",), "Input should be greater than or equal to 1")
    _system(body)
    _number_between(body, "temperature", 0, 1)
    _number_between(body, "top_p", 0, 1)
    if (_get(body, "top_k", (), "integer") or 0) < 0:
        _fail(("top_k",), "Input should be greater than or equal to 0")
    _get(body, "stream", (), "boolean")
    for index, stop in enumerate(_get(body, "stop_sequences", (), "array") or []):
        if not isinstance(stop, str):
            _fail(("stop_sequences", index), "string", "type")
    metadata = _get(body, "metadata", (), "object")
    if metadata is not None:
        _object(metadata, ("metadata",), {"user_id"})
        _get(metadata, "user_id", ("metadata",), "string", nullable=True)
    if body.get("service_tier", "auto") not in ("auto", "standard_only"):
        _fail(("service_tier",), "Input should be 'auto' or 'standard_only'")
    names = _tools(body)
    _tool_choice(body, names)
    _thinking(body, max_tokens)
    messages = _get(body, "messages", (), "array", required=True)
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
        _fail(
            ("messages", index, "content", 0, "type"),
            f"Expected `thinking` or `redacted_thinking`, but found `{first}`. When "
            "`thinking` is enabled, a final `assistant` message must start with a thinking "
            "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
            "recommend you include thinking blocks from previous turns. To avoid this "
            "requirement, disable `thinking`.",
        )


def _count_tokens_body(body: Any) -> None:
    _object(body, (), COUNT_TOKENS_FIELDS)
    if not _get(body, "model", (), "string", required=True):
        _fail(("model",), "must not be empty")
    _system(body)
    names = _tools(body)
    _tool_choice(body, names)
    _thinking(body, None)
    _conversation(_get(body, "messages", (), "array", required=True), has_tools=bool(names))


def _system(body: Mapping[str, Any]) -> None:
    system = body.get("system")
    if isinstance(system, list):
        for index, block in enumerate(system):
            if _block(block, ("system", index)) != "text":
                _fail(("system", index, "type"), "Input should be 'text'")
    elif "system" in body and not isinstance(system, str):
        _fail(("system",), "string", "type")


def _conversation(messages: list[Any], *, has_tools: bool) -> None:
    if not messages:
        _fail(("messages",), "at least one message is required")
    previous_role, open_uses = None, set[str]()
    for index, message in enumerate(messages):
        path: Path = ("messages", index)
        _object(message, path, {"role", "content"})
        role = _get(message, "role", path, "string", required=True)
        if role not in ("user", "assistant"):
            _fail((*path, "role"), "Input should be 'user' or 'assistant'")
        if previous_role is None and role != "user":
            _fail(("messages",), 'first message must use the "user" role')
        if role == previous_role:
            _fail(
                ("messages",),
                f'roles must alternate between "user" and "assistant", '
                f'but found multiple "{role}" roles in a row',
            )
        is_final_assistant = role == "assistant" and index == len(messages) - 1
        blocks = _message_blocks(message, path, is_final_assistant)
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [(j, b) for j, b in enumerate(blocks) if b["type"] == "tool_result"]
        if (uses or results) and not has_tools:
            _fail(
                ("tools",),
                "Requests which include `tool_use` or `tool_result` blocks must define tools.",
            )
        if (role == "user" and uses) or (role == "assistant" and results):
            _fail(path, f"{role} messages may not hold {'tool_use' if uses else 'tool_result'}")
        _check_results(path, results, open_uses)
        open_uses = set(uses)
        previous_role = role


def _check_results(path: Path, results: list[Any], open_uses: set[str]) -> None:
    """A user turn answers every tool_use of the turn before, tool_result blocks first."""
    for position, (j, block) in enumerate(results):
        if j != position:
            _fail((*path, "content", j), "tool_result blocks must come first in the content")
        if block["tool_use_id"] not in open_uses:
            _fail(
                (*path, "content", j),
                f"unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {block['tool_use_id']}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message.",
            )
    missing = open_uses - {block["tool_use_id"] for _j, block in results}
    if missing:
        _fail(
            path,
            f"`tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(sorted(missing))}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message.",
        )


def _message_blocks(message: Mapping[str, Any], path: Path, final_assistant: bool) -> list[Any]:
    content = message.get("content")
    if content is None:
        _fail((*path, "content"), kind="missing")
    if not content and not final_assistant:
        _fail(
            path,
            "all messages must have non-empty content except for the optional final "
            "assistant message",
        )
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        _fail((*path, "content"), "array", "type")
    for index, block in enumerate(content):
        _block(block, (*path, "content", index))
    return content


def _block(block: Any, path: Path, types: frozenset[str] = _BLOCK_TYPES) -> str:
    """Check one content block; returns its type."""
    _object(block, path)
    kind = _get(block, "type", path, "string", required=True)
    if kind not in types:
        expected = ", ".join(f"'{t}'" for t in sorted(types))
        _fail(
            (*path, "type"),
            f"Input tag '{kind}' found using 'type' does not match any of "
            f"the expected tags: {expected}",
        )
    if kind == "text":
        _object(block, path, {"type", "text", "cache_control", "citations"})
        if not _get(block, "text", path, "string", required=True):
            _fail(path, "text content blocks must be non-empty")
    elif kind == "image":
        _object(block, path, {"type", "source", "cache_control"})
        _image_source(_get(block, "source", path, "object", required=True), (*path, "source"))
    elif kind == "tool_use":
        _object(block, path, {"type", "id", "name", "input", "cache_control", "caller"})
        _get(block, "id", path, "string", required=True)
        _get(block, "name", path, "string", required=True)
        _get(block, "input", path, "object", required=True)
    elif kind == "tool_result":
        _object(block, path, {"type", "tool_use_id", "content", "is_error", "cache_control"})
        _get(block, "tool_use_id", path, "string", required=True)
        _get(block, "is_error", path, "boolean")
        content = block.get("content")
        if isinstance(content, list):
            for index, part in enumerate(content):
                _block(part, (*path, "content", index), _TOOL_RESULT_BLOCK_TYPES)
        elif "content" in block and not isinstance(content, str):
            _fail((*path, "content"), "string", "type")
    return kind


def _image_source(source: Mapping[str, Any], path: Path) -> None:
    kind = source.get("type")
    if kind == "base64":
        _object(source, path, {"type", "media_type", "data"})
        if source.get("media_type") not in _IMAGE_MEDIA_TYPES:
            _fail(
                (*path, "media_type"),
                "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
            )
        _get(source, "data", path, "string", required=True)
    elif kind == "url":
        _object(source, path, {"type", "url"})
        _get(source, "url", path, "string", required=True)
    elif kind == "file":
        _object(source, path, {"type", "file_id"})
        _get(source, "file_id", path, "string", required=True)
    else:
        _fail((*path, "type"), "Input should be 'base64', 'url' or 'file'")


def _tools(body: Mapping[str, Any]) -> set[str]:
    """Check `tools`; returns the declared names."""
    names: set[str] = set()
    for index, tool in enumerate(_get(body, "tools", (), "array") or []):
        path: Path = ("tools", index)
        _object(tool, path)
        kind = tool.get("type")
        if kind not in (None, "custom"):  # a server tool: Anthropic knows each by its type
            if not isinstance(kind, str) or not _SERVER_TOOL_TYPE.match(kind):
                _fail((*path, "type"), f"unknown tool type {kind!r}")
        else:
            _object(tool, path, _CUSTOM_TOOL_FIELDS)
            _get(tool, "description", path, "string")
            _get(tool, "strict", path, "boolean")
            schema = _get(tool, "input_schema", path, "object", required=True)
            if schema.get("type") != "object":
                _fail((*path, "input_schema", "type"), "Input should be 'object'")
        name = _get(tool, "name", path, "string", required=True)
        if not TOOL_NAME.match(name):
            _fail((*path, "name"), f"String should match pattern '{TOOL_NAME.pattern}'")
        if name in names:
            _fail(("tools",), "Tool names must be unique.")
        names.add(name)
    return names


def _tool_choice(body: Mapping[str, Any], names: set[str]) -> None:
    choice = _get(body, "tool_choice", (), "object")
    if choice is None:
        return
    fields = _TOOL_CHOICE_FIELDS.get(choice.get("type"))
    if fields is None:
        _fail(("tool_choice", "type"), "Input should be 'auto', 'any', 'tool' or 'none'")
    _object(choice, ("tool_choice",), fields)
    _get(choice, "disable_parallel_tool_use", ("tool_choice",), "boolean")
    if choice["type"] == "tool":
        name = _get(choice, "name", ("tool_choice",), "string", required=True)
        if name not in names:
            _fail(("tool_choice", "name"), f"Tool '{name}' not found in provided tools")


def _thinking(body: Mapping[str, Any], max_tokens: int | None) -> None:
    """`max_tokens` None: a count, which has none for the budget to stay below."""
    thinking = _get(body, "thinking", (), "object")
    if thinking is None or thinking.get("type") == "disabled":
        return
    if thinking.get("type") == "enabled":
        _object(thinking, ("thinking",), {"type", "budget_tokens", "display"})
        budget = _get(thinking, "budget_tokens", ("thinking",), "integer", required=True)
        if budget < MIN_THINKING_BUDGET:
            _fail(("thinking", "budget_tokens"), "Input should be greater than or equal to 1024")
        if max_tokens is not None and budget >= max_tokens:
            _fail(("max_tokens",), "`max_tokens` must be greater than `thinking.budget_tokens`")
    elif thinking.get("type") != "adaptive":
        _fail(("thinking", "type"), "Input should be 'enabled', 'disabled' or 'adaptive'")
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        _fail((), "Thinking may not be enabled when tool_choice forces tool use.")
    if body.get("temperature") not in (None, 1):
        _fail(("temperature",), "may only be set to 1 when thinking is enabled")
    if body.get("top_p") is not None and body["top_p"] < 0.95:
        _fail(("top_p",), "must be at least 0.95 when thinking is enabled")


# OpenAI chat completions: known fields only; null is absent, as OpenAI treats it.


def _chat_body(body: Mapping[str, Any]) -> None:
    _chat_messages(body.get("messages"))
    has_tools = _chat_tools(body)
    _chat_tool_choice(body, has_tools)
    _response_format(body)
    for key in ("stream", "parallel_tool_calls", "logprobs"):
        _get(body, key, (), "boolean", nullable=True)
    options = _get(body, "stream_options", (), "object", nullable=True)
    if options is not None:
        _get(options, "include_usage", ("stream_options",), "boolean", nullable=True)
    if (_get(body, "n", (), "integer", nullable=True) or 1) < 1:
        _fail(("n",), "must be at least 1")
    _number_between(body, "temperature", 0, 2, nullable=True)
    _number_between(body, "top_p", 0, 1, nullable=True)
    _number_between(body, "presence_penalty", -2, 2, nullable=True)
    _number_between(body, "frequency_penalty", -2, 2, nullable=True)
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or len(stop) > MAX_STOP_SEQUENCES:
            _fail(("stop",), f"must be a string or an array of at most {MAX_STOP_SEQUENCES}")
        for index, sequence in enumerate(stop):
            if not isinstance(sequence, str):
                _fail(("stop", index), "string", "type")


def _chat_messages(messages: Sequence[Any]) -> None:
    answerable: set[str] = set()  # tool_call ids of the last assistant turn
    pending: set[str] = set()  # those not answered yet
    for index, message in enumerate(messages):
        path: Path = ("messages", index)
        _object(message, path)
        role = _get(message, "role", path, "string", required=True)
        if role not in _CHAT_ROLES:
            _fail(
                (*path, "role"),
                f"'{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'function', 'tool', and 'developer'.",
            )
        if role == "tool":
            call_id = _get(message, "tool_call_id", path, "string", required=True)
            if call_id not in answerable:
                _fail(
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
    _fail(
        path,
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {', '.join(sorted(call_ids))}",
    )


def _chat_content(message: Mapping[str, Any], path: Path, *, required: bool) -> None:
    content = message.get("content")
    if content is None:
        if required:
            _fail((*path, "content"), kind="missing")
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        _fail((*path, "content"), "string or array of objects", "type")
    for index, part in enumerate(content):
        where: Path = (*path, "content", index)
        _object(part, where)
        kind = _get(part, "type", where, "string", required=True)
        if kind == "text":
            _get(part, "text", where, "string", required=True)
        elif kind == "image_url":
            image = _get(part, "image_url", where, "object", required=True)
            _get(image, "url", (*where, "image_url"), "string", required=True)


def _tool_calls(message: Mapping[str, Any], path: Path) -> set[str]:
    ids: set[str] = set()
    for index, call in enumerate(_get(message, "tool_calls", path, "array", nullable=True) or []):
        where: Path = (*path, "tool_calls", index)
        _object(call, where)
        ids.add(_get(call, "id", where, "string", required=True))
        if call.get("type") != "function":
            _fail((*where, "type"), "Supported values are: 'function'.")
        function = _get(call, "function", where, "object", required=True)
        _get(function, "name", (*where, "function"), "string", required=True)
        _get(function, "arguments", (*where, "function"), "string", required=True)
    return ids


def _chat_tools(body: Mapping[str, Any]) -> bool:
    tools = _get(body, "tools", (), "array", nullable=True) or []
    for index, tool in enumerate(tools):
        path: Path = ("tools", index)
        _object(tool, path)
        if tool.get("type") != "function":
            _fail((*path, "type"), "Supported values are: 'function'.")
        function = _get(tool, "function", path, "object", required=True)
        where: Path = (*path, "function")
        name = _get(function, "name", where, "string", required=True)
        if not TOOL_NAME.match(name):
            _fail((*where, "name"), f"string does not match pattern '{TOOL_NAME.pattern}'")
        _get(function, "description", where, "string", nullable=True)
        _get(function, "parameters", where, "object", nullable=True)
        _get(function, "strict", where, "boolean", nullable=True)
    return bool(tools)


def _chat_tool_choice(body: Mapping[str, Any], has_tools: bool) -> None:
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not has_tools:
        _fail(("tool_choice",), "'tool_choice' is only allowed when 'tools' are specified.")
    if isinstance(choice, str):
        if choice not in _TOOL_CHOICE_MODES:
            _fail(
                ("tool_choice",),
                f"'{choice}'. Supported values are: 'none', 'auto', and 'required'.",
            )
        return
    _object(choice, ("tool_choice",))
    if choice.get("type") != "function":
        _fail(("tool_choice", "type"), "Supported values are: 'function'.")
    function = _get(choice, "function", ("tool_choice",), "object", required=True)
    _get(function, "name", ("tool_choice", "function"), "string", required=True)


def _response_format(body: Mapping[str, Any]) -> None:
    response_format = _get(body, "response_format", (), "object", nullable=True)
    if response_format is None:
        return
    kind = response_format.get("type")
    if kind not in _RESPONSE_FORMATS:
        _fail(
            ("response_format", "type"),
            f"'{kind}'. Supported values are: 'text', 'json_object', and 'json_schema'.",
        )
    if kind == "json_schema":
        path: Path = ("response_format",)
        spec = _get(response_format, "json_schema", path, "object", required=True)
        name = _get(spec, "name", (*path, "json_schema"), "string", required=True)
        if not TOOL_NAME.match(name):
            _fail(
                (*path, "json_schema", "name"),
                f"string does not match pattern '{TOOL_NAME.pattern}'",
            )
        _get(spec, "schema", (*path, "json_schema"), "object", nullable=True)
        _get(spec, "strict", (*path, "json_schema"), "boolean", nullable=True)
