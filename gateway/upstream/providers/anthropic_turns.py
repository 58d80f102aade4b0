"""An OpenAI conversation -> Anthropic turns, for the Anthropic adapter (`anthropic`):
system and developer messages become the system prompt, the rest strictly alternating
user/assistant turns (empty ones dropped, consecutive ones of a role merged, a user turn
opening the conversation); content parts become text and image blocks, an assistant's
tool calls `tool_use` blocks and a tool message a `tool_result` block. Pure translation:
raises `ValueError` naming the message (`messages[3]`) for input Anthropic cannot express.
"""

from __future__ import annotations

from typing import Any

import orjson

JSONObject = dict[str, Any]

OPENING_USER_TURN = "(conversation start)"
_SYSTEM_ROLES = frozenset({"system", "developer"})


def translate_messages(messages: Any) -> tuple[str, list[JSONObject]]:
    """Split out the system prompt and build strictly alternating user/assistant turns."""
    if not isinstance(messages, list):
        raise ValueError("messages: must be an array")
    system_texts: list[str] = []
    turns: list[JSONObject] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ValueError(f"messages[{index}]: must be an object")
        if message.get("role") in _SYSTEM_ROLES:
            system_texts.extend(_texts_of(message.get("content"), index))
        else:
            _append_turn(turns, _translate_message(message, index))
    if turns and turns[0]["role"] == "assistant":
        # OpenAI accepts a conversation that opens with the assistant (a chatbot's
        # greeting); Anthropic wants a user turn first. A neutral placeholder turn keeps
        # the greeting, as LiteLLM does, instead of refusing a common client shape.
        turns.insert(0, {"role": "user", "content": OPENING_USER_TURN})
    return "\n\n".join(text for text in system_texts if text), turns


def _texts_of(content: Any, index: int) -> list[str]:
    if content is None or isinstance(content, str):
        return [content or ""]
    if not isinstance(content, list):
        raise ValueError(f"messages[{index}]: content must be a string or an array of parts")
    if any(not isinstance(part, dict) or part.get("type") != "text" for part in content):
        raise ValueError(f"messages[{index}]: system content must be text")
    return [_text_of(part, index) for part in content]


def _text_of(part: JSONObject, index: int) -> str:
    text = part.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"messages[{index}]: a text part's text must be a string")
    return text or ""


def _translate_message(message: JSONObject, index: int) -> JSONObject:
    role = message.get("role")
    if role == "tool":
        return {"role": "user", "content": [_tool_result(message, index)]}
    content = _content(message.get("content"), index)
    if role == "user":
        return {"role": "user", "content": content}
    if role == "assistant":
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ValueError(f"messages[{index}]: tool_calls must be an array")
        tool_uses = [_tool_use(call, index) for call in calls]
        if tool_uses:
            content = _as_blocks(content) + tool_uses
        return {"role": "assistant", "content": content}
    raise ValueError(f"messages[{index}]: unsupported role {role!r}")


def _append_turn(turns: list[JSONObject], turn: JSONObject) -> None:
    # Anthropic rejects empty content and requires user/assistant alternation, so empty
    # turns are dropped and consecutive same-role turns are merged.
    if not turn["content"]:
        return
    if not turns or turns[-1]["role"] != turn["role"]:
        turns.append(turn)
        return
    blocks = _as_blocks(turns[-1]["content"]) + _as_blocks(turn["content"])
    # tool_result blocks must come first in a user turn; the sort is stable.
    blocks.sort(key=lambda block: block["type"] != "tool_result")
    turns[-1] = {"role": turn["role"], "content": blocks}


def _content(content: Any, index: int) -> str | list[JSONObject]:
    """String content stays a string; content parts become Anthropic blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError(f"messages[{index}]: content must be a string or an array of parts")
    blocks = [_content_block(part, index) for part in content]
    return [block for block in blocks if block["type"] != "text" or block["text"]]


def _as_blocks(content: str | list[JSONObject]) -> list[JSONObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _content_block(part: Any, index: int) -> JSONObject:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text":
        return {"type": "text", "text": _text_of(part, index)}
    if kind == "image_url":
        return _image_block(part.get("image_url"), index)
    raise ValueError(f"messages[{index}]: unsupported content part type {kind!r}")


def _image_block(image_url: Any, index: int) -> JSONObject:
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str):
        raise ValueError(f"messages[{index}]: image_url must be a URL string or {{'url': ...}}")
    if url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    header, comma, data = url.removeprefix("data:").partition(",")
    media_type, _, encoding = header.partition(";")
    if url.startswith("data:") and comma and encoding == "base64":
        source = {"type": "base64", "media_type": media_type, "data": data}
        return {"type": "image", "source": source}
    raise ValueError(f"messages[{index}]: image_url must be an http(s) URL or base64 data URL")


def _tool_use(call: Any, index: int) -> JSONObject:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise ValueError(f"messages[{index}]: each tool call must be an object with a function")
    if call.get("type", "function") != "function":
        raise ValueError(f"messages[{index}]: unsupported tool call type {call.get('type')!r}")
    function, call_id = call["function"], call.get("id")
    if not isinstance(call_id, str) or not isinstance(function.get("name"), str):
        raise ValueError(f"messages[{index}]: a tool call needs a string id and function name")
    arguments = function.get("arguments") or "{}"  # OpenAI models emit "" for no arguments
    if not isinstance(arguments, str):
        raise ValueError(f"messages[{index}]: tool call {call_id!r} arguments must be a string")
    try:
        tool_input = orjson.loads(arguments)
    except orjson.JSONDecodeError as exc:
        raise ValueError(
            f"messages[{index}]: tool call {call_id!r} arguments are not valid JSON"
        ) from exc
    if not isinstance(tool_input, dict):
        raise ValueError(f"messages[{index}]: tool call {call_id!r} arguments not an object")
    return {"type": "tool_use", "id": call_id, "name": function["name"], "input": tool_input}


def _tool_result(message: JSONObject, index: int) -> JSONObject:
    if not isinstance(message.get("tool_call_id"), str):
        raise ValueError(f"messages[{index}]: a tool message needs a string tool_call_id")
    block: JSONObject = {"type": "tool_result", "tool_use_id": message["tool_call_id"]}
    content = _content(message.get("content"), index)
    if content:
        block["content"] = content
    return block
