"""The Anthropic Messages API's `system` and `messages` as chat-completions messages (SPEC
R-API-9), and `MessagesRequestError`, the refusal the whole request translation raises. A
string system prompt or a list of text blocks becomes one leading system message. A user
turn's `tool_result` blocks become chat `tool` messages (chat wants them right after the
assistant's `tool_calls`), its text and image blocks one user message after them; an
assistant turn's text and `tool_use` blocks become one assistant message with `tool_calls`.
`cache_control` is checked and stays on the chat content part it was on (an Anthropic
upstream gets the client's own blocks, gateway/api/anthropic/messages.py). Everything refused names
the Anthropic path (`messages[2].content[0].source`): the client only knows the request it
sent. Pure: no Django, no I/O.
"""

from __future__ import annotations

from typing import Any

import orjson

Message = dict[str, Any]
Part = dict[str, Any]

ROLES = ("user", "assistant")
# Thinking is the model's own scratch work, signed by Anthropic for the model that wrote it:
# chat has no field for it and no other provider can read it. Claude Code sends every
# earlier turn's thinking back, so these are dropped, not refused. (An Anthropic upstream
# reached through this chat body therefore loses it too; Anthropic wants it back in a tool
# loop while thinking is on, which only a native Anthropic call can give it.)
DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
# A failed tool call says so in Anthropic's `is_error`; chat `tool` messages have no such
# flag, so the model would read an error message as the tool's normal output. The prefix
# keeps that one bit in words every model reads.
TOOL_ERROR_PREFIX = "Error: "
_IMAGE_SOURCES = ("base64", "url")
_DOCUMENT_BLOCKS = frozenset({"document", "search_result", "container_upload"})
NOT_STORED = "Switchyard has no file store; send the content inline (a base64 or url source)"
SERVER_TOOL_BLOCK = (
    "blocks of Anthropic's server tools (web search, code execution, MCP "
    "connectors) can be replayed only to Anthropic"
)


class MessagesRequestError(ValueError):
    """A request Switchyard refuses. `message` names the Anthropic field path `param`; the
    caller answers it as Anthropic's `invalid_request_error` with status 400."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def refuse(param: str, reason: str) -> MessagesRequestError:
    return MessagesRequestError(f"`{param}`: {reason}", param)


def to_messages(system: Any, messages: Any) -> list[Message]:
    """`system` (a leading system message) and `messages` as chat messages. Raises
    MessagesRequestError naming `system[i]…` or `messages[i]…`."""
    chat = _system(system)
    if not isinstance(messages, list) or not messages:
        raise refuse("messages", "is required: a non-empty array of messages")
    for index, message in enumerate(messages):
        chat.extend(_turn(message, f"messages[{index}]"))
    return chat


def _system(system: Any) -> list[Message]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if not isinstance(system, list):
        raise refuse("system", "must be a string or an array of text blocks")
    parts = []
    for index, block in enumerate(system):
        param = f"system[{index}]"
        if _kind(block, param) != "text":
            raise refuse(f"{param}.type", "system blocks must be text blocks")
        parts.append(_text_part(block, param))
    return [{"role": "system", "content": collapsed(parts)}] if parts else []


def _turn(message: Any, param: str) -> list[Message]:
    if not isinstance(message, dict):
        raise refuse(param, "must be an object with `role` and `content`")
    role, content = message.get("role"), message.get("content")
    if role not in ROLES:
        raise refuse(f"{param}.role", 'must be "user" or "assistant"')
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise refuse(f"{param}.content", "must be a string or an array of content blocks")
    if not content and role == "user":
        raise refuse(f"{param}.content", "must not be empty")
    if role == "user":
        return _user_turn(content, f"{param}.content")
    return _assistant_turn(content, f"{param}.content")


def _user_turn(blocks: list[Any], param: str) -> list[Message]:
    """Tool results first, as chat `tool` messages, then the rest as one user message.
    Images inside tool results join that user message: chat tool messages carry text only,
    and Claude Code returns screenshots and image files this way."""
    tool_messages: list[Message] = []
    parts: list[Part] = []
    for index, block in enumerate(blocks):
        where = f"{param}[{index}]"
        kind = _kind(block, where)
        if kind == "text":
            parts.append(_text_part(block, where))
        elif kind == "image":
            parts.append(_image_part(block, where))
        elif kind == "tool_result":
            message, images = _tool_result(block, where)
            tool_messages.append(message)
            parts.extend(images)
        else:
            raise _unsupported(kind, where, "user")
    if parts:
        tool_messages.append({"role": "user", "content": collapsed(parts)})
    return tool_messages


def _assistant_turn(blocks: list[Any], param: str) -> list[Message]:
    parts: list[Part] = []
    calls: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        where = f"{param}[{index}]"
        kind = _kind(block, where)
        if kind == "text":
            parts.append(_text_part(block, where))
        elif kind == "tool_use":
            calls.append(_tool_call(block, where))
        elif kind not in DROPPED_BLOCKS:
            raise _unsupported(kind, where, "assistant")
    if not parts and not calls:
        return []  # thinking alone: nothing a chat model could read (an empty prefill too)
    message: Message = {"role": "assistant", "content": collapsed(parts) if parts else None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def collapsed(parts: list[Part]) -> str | list[Part]:
    """One plain text part as a string (what every chat upstream accepts), else the parts."""
    if len(parts) == 1 and parts[0].keys() == {"type", "text"}:
        return str(parts[0]["text"])
    return parts


def _kind(block: Any, param: str) -> str:
    if not isinstance(block, dict):
        raise refuse(param, "must be a content block object")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise refuse(f"{param}.type", "must be a string")
    return kind


def _text_part(block: dict[str, Any], param: str) -> Part:
    # `citations` (from documents or web search) have no chat form; the text stays.
    text = block.get("text")
    if not isinstance(text, str):
        raise refuse(f"{param}.text", "must be a string")
    return _with_cache_control({"type": "text", "text": text}, block, param)


def _with_cache_control(part: Part, block: dict[str, Any], param: str) -> Part:
    """The part, with the block's `cache_control` where the Anthropic adapter can keep it
    (chat parts carry it under the same name, as OpenRouter and LiteLLM send it)."""
    marker = block.get("cache_control")
    if marker is None:
        return part
    if not isinstance(marker, dict):
        raise refuse(f"{param}.cache_control", "must be an object")
    return {**part, "cache_control": marker}


def _image_part(block: dict[str, Any], param: str) -> Part:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "file":
        raise refuse(f"{param}.source", NOT_STORED)
    if not isinstance(source, dict) or kind not in _IMAGE_SOURCES:
        raise refuse(f"{param}.source.type", 'must be "base64" or "url"')
    if kind == "url":
        url = _string(source, "url", f"{param}.source")
    else:
        media_type = _string(source, "media_type", f"{param}.source")
        url = f"data:{media_type};base64,{_string(source, 'data', f'{param}.source')}"
    return _with_cache_control({"type": "image_url", "image_url": {"url": url}}, block, param)


def _string(block: dict[str, Any], field: str, param: str) -> str:
    value = block.get(field)
    if not isinstance(value, str) or not value:
        raise refuse(f"{param}.{field}", "must be a non-empty string")
    return value


def _tool_call(block: dict[str, Any], param: str) -> dict[str, Any]:
    # A tool_use block's own cache_control is dropped: chat tool calls have no place for
    # it, and Claude Code marks the last (user) turn, never an assistant's tool call.
    tool_input = block.get("input")
    if not isinstance(tool_input, dict):
        raise refuse(f"{param}.input", "must be an object")
    function = {
        "name": _string(block, "name", param),
        "arguments": orjson.dumps(tool_input).decode(),
    }
    return {"id": _string(block, "id", param), "type": "function", "function": function}


def _tool_result(block: dict[str, Any], param: str) -> tuple[Message, list[Part]]:
    """(the chat `tool` message, the result's images for the user message after it)."""
    call_id = _string(block, "tool_use_id", param)
    content = block.get("content")
    texts: list[Part] = []
    images: list[Part] = []
    if isinstance(content, str):
        texts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        for index, part in enumerate(content):
            where = f"{param}.content[{index}]"
            kind = _kind(part, where)
            if kind == "text":
                texts.append(_text_part(part, where))
            elif kind == "image":
                images.append(_image_part(part, where))
            else:
                raise refuse(f"{where}.type", "tool results may hold text and image blocks")
    elif content is not None:
        raise refuse(f"{param}.content", "must be a string or an array of content blocks")
    texts = _marked_error(texts, block.get("is_error"), param)
    if block.get("cache_control") is not None:
        texts = texts or [{"type": "text", "text": ""}]
        texts[-1] = _with_cache_control(texts[-1], block, param)
    body = collapsed(texts) if texts else ""
    return {"role": "tool", "tool_call_id": call_id, "content": body}, images


def _marked_error(texts: list[Part], is_error: Any, param: str) -> list[Part]:
    if is_error is None or is_error is False:
        return texts
    if is_error is not True:
        raise refuse(f"{param}.is_error", "must be a boolean")
    if not texts:
        return [{"type": "text", "text": TOOL_ERROR_PREFIX.strip()}]
    return [{**texts[0], "text": TOOL_ERROR_PREFIX + texts[0]["text"]}, *texts[1:]]


def _unsupported(kind: str, param: str, role: str) -> MessagesRequestError:
    if kind in _DOCUMENT_BLOCKS:
        reason = f"{kind} blocks are not supported; send the document's text as a text block"
    elif kind.endswith(("tool_use", "tool_result")) and kind not in ("tool_use", "tool_result"):
        reason = SERVER_TOOL_BLOCK
    else:
        reason = f"a {role} message cannot hold {kind!r} blocks"
    return refuse(f"{param}.type", reason)
