"""Anthropic Messages API adapter: translates an OpenAI chat-completions request into an
Anthropic `POST /messages` request, and an Anthropic response or error back into OpenAI
shapes. Pure translation: no network, no Django, no clock. Streaming lives in
`gateway.providers.anthropic_stream` and is re-exported here as `StreamTranslator`.

Request translation raises `ValueError` (message names the offending field, e.g.
`messages[3]`) for input Anthropic cannot express; the gateway answers those with a 400.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.providers.anthropic_stream import (
    StreamTranslator,
    finish_reason_for,
    openai_usage,
)

__all__ = ["API_VERSION", "StreamTranslator", "build_request", "parse_error", "parse_response"]

JSONObject = dict[str, Any]

API_VERSION = "2023-06-01"
# Anthropic requires max_tokens and OpenAI clients usually omit it; 4096 fits every Claude model.
DEFAULT_MAX_TOKENS = 4096
# Non-JSON error bodies (proxy HTML pages) are cut to this many characters before we log or
# show them: enough to recognise the page, not enough to flood a trace.
ERROR_BODY_MAX_CHARS = 500

_SYSTEM_ROLES = frozenset({"system", "developer"})
_PASSTHROUGH_FIELDS = ("temperature", "top_p", "thinking")
_TOOL_CHOICES: dict[str, JSONObject] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}
# From Anthropic's error docs; they use invalid_request_error for unlisted 4xx statuses.
_ERROR_TYPES_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def build_request(
    body: JSONObject, upstream_model: str, api_key: str, *, stream: bool
) -> tuple[dict[str, str], bytes]:
    """OpenAI chat-completions body -> (headers, JSON bytes) for POST {base_url}/messages.

    Raises ValueError for requests Anthropic cannot serve (n > 1, malformed tool-call
    arguments, unsupported content parts, tools or roles)."""
    if body.get("n") not in (None, 1):
        raise ValueError("n: Anthropic upstreams return one choice; n must be 1")
    system, messages = _translate_messages(body.get("messages") or [])
    payload: JSONObject = {
        "model": upstream_model,
        "max_tokens": _max_tokens(body),
        "messages": messages,
    }
    if system:
        payload["system"] = system
    for field in _PASSTHROUGH_FIELDS:
        if body.get(field) is not None:
            payload[field] = body[field]
    stop = body.get("stop")
    if stop:
        payload["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if body.get("user"):
        payload["metadata"] = {"user_id": body["user"]}
    payload.update(_translate_tools(body))
    payload["stream"] = stream
    headers = {
        "x-api-key": api_key,
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
    }
    return headers, orjson.dumps(payload)


def _max_tokens(body: JSONObject) -> int:
    for field in ("max_completion_tokens", "max_tokens"):
        if body.get(field) is not None:
            return int(body[field])
    # Anthropic rejects budget_tokens >= max_tokens, so the default must leave room for the
    # answer on top of the thinking budget.
    thinking = body.get("thinking") or {}
    return DEFAULT_MAX_TOKENS + int(thinking.get("budget_tokens") or 0)


def _translate_messages(messages: list[JSONObject]) -> tuple[str, list[JSONObject]]:
    """Split out the system prompt and build strictly alternating user/assistant turns."""
    system_texts: list[str] = []
    turns: list[JSONObject] = []
    for index, message in enumerate(messages):
        if message.get("role") in _SYSTEM_ROLES:
            system_texts.extend(_texts_of(message.get("content"), index))
        else:
            _append_turn(turns, _translate_message(message, index))
    return "\n\n".join(text for text in system_texts if text), turns


def _texts_of(content: str | list[JSONObject] | None, index: int) -> list[str]:
    if content is None or isinstance(content, str):
        return [content or ""]
    if any(part.get("type") != "text" for part in content):
        raise ValueError(f"messages[{index}]: system content must be text")
    return [part.get("text") or "" for part in content]


def _translate_message(message: JSONObject, index: int) -> JSONObject:
    role = message.get("role")
    if role == "tool":
        return {"role": "user", "content": [_tool_result(message, index)]}
    content = _content(message.get("content"), index)
    if role == "user":
        return {"role": "user", "content": content}
    if role == "assistant":
        tool_uses = [_tool_use(call, index) for call in message.get("tool_calls") or []]
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


def _content(content: str | list[JSONObject] | None, index: int) -> str | list[JSONObject]:
    """String content stays a string; content parts become Anthropic blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    blocks = [_content_block(part, index) for part in content]
    return [block for block in blocks if block["type"] != "text" or block["text"]]


def _as_blocks(content: str | list[JSONObject]) -> list[JSONObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _content_block(part: JSONObject, index: int) -> JSONObject:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part.get("text") or ""}
    if kind == "image_url":
        return _image_block(part.get("image_url"), index)
    raise ValueError(f"messages[{index}]: unsupported content part type {kind!r}")


def _image_block(image_url: JSONObject | str | None, index: int) -> JSONObject:
    url = image_url.get("url", "") if isinstance(image_url, dict) else image_url or ""
    if url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    header, comma, data = url.removeprefix("data:").partition(",")
    media_type, _, encoding = header.partition(";")
    if url.startswith("data:") and comma and encoding == "base64":
        source = {"type": "base64", "media_type": media_type, "data": data}
        return {"type": "image", "source": source}
    raise ValueError(f"messages[{index}]: image_url must be an http(s) URL or base64 data URL")


def _tool_use(call: JSONObject, index: int) -> JSONObject:
    if call.get("type", "function") != "function":
        raise ValueError(f"messages[{index}]: unsupported tool call type {call.get('type')!r}")
    function = call.get("function") or {}
    try:
        # OpenAI models emit "" for argument-less calls; Anthropic wants an object.
        tool_input = orjson.loads(function.get("arguments") or "{}")
    except orjson.JSONDecodeError as exc:
        raise ValueError(
            f"messages[{index}]: tool call {call.get('id')!r} arguments are not valid JSON"
        ) from exc
    if not isinstance(tool_input, dict):
        raise ValueError(f"messages[{index}]: tool call {call.get('id')!r} arguments not an object")
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": tool_input,
    }


def _tool_result(message: JSONObject, index: int) -> JSONObject:
    block: JSONObject = {"type": "tool_result", "tool_use_id": message.get("tool_call_id")}
    content = _content(message.get("content"), index)
    if content:
        block["content"] = content
    return block


def _translate_tools(body: JSONObject) -> JSONObject:
    tools = body.get("tools")
    if not tools:
        return {}
    translated: JSONObject = {"tools": [_tool(tool, i) for i, tool in enumerate(tools)]}
    choice = _tool_choice(body.get("tool_choice"), body.get("parallel_tool_calls"))
    if choice is not None:
        translated["tool_choice"] = choice
    return translated


def _tool(tool: JSONObject, index: int) -> JSONObject:
    if tool.get("type") != "function":
        raise ValueError(f"tools[{index}]: unsupported tool type {tool.get('type')!r}")
    function = tool.get("function") or {}
    schema = function.get("parameters") or {"type": "object", "properties": {}}
    translated: JSONObject = {"name": function.get("name"), "input_schema": schema}
    if function.get("description"):
        translated["description"] = function["description"]
    return translated


def _tool_choice(choice: str | JSONObject | None, parallel: bool | None) -> JSONObject | None:
    if choice is None:
        # Only parallel_tool_calls=false needs an explicit choice; "auto" is the default.
        translated = {"type": "auto"} if parallel is False else None
    elif isinstance(choice, str) and choice in _TOOL_CHOICES:
        translated = dict(_TOOL_CHOICES[choice])
    elif isinstance(choice, dict) and choice.get("type") == "function":
        translated = {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    else:
        raise ValueError(f"tool_choice: unsupported value {choice!r}")
    if parallel is False and translated is not None and translated["type"] != "none":
        translated["disable_parallel_tool_use"] = True
    return translated


def parse_response(data: bytes, *, model: str, completion_id: str, created: int) -> JSONObject:
    """Anthropic message JSON bytes -> OpenAI `chat.completion` dict reporting `model`.

    Raises ValueError (orjson.JSONDecodeError) when the body is not JSON."""
    message = orjson.loads(data)
    blocks = message.get("content") or []
    texts = [block.get("text") or "" for block in blocks if block.get("type") == "text"]
    tool_calls = [_tool_call(block) for block in blocks if block.get("type") == "tool_use"]
    reply: JSONObject = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "refusal": None,
    }
    if tool_calls:
        reply["tool_calls"] = tool_calls
    choice = {
        "index": 0,
        "message": reply,
        "logprobs": None,
        "finish_reason": finish_reason_for(message.get("stop_reason")),
    }
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": openai_usage(message.get("usage") or {}),
    }


def _tool_call(block: JSONObject) -> JSONObject:
    arguments = orjson.dumps(block.get("input") or {}).decode()
    function = {"name": block.get("name"), "arguments": arguments}
    return {"id": block.get("id"), "type": "function", "function": function}


def parse_error(status: int, data: bytes) -> tuple[str, str]:
    """Anthropic error body -> (error type, message). Bodies that are not Anthropic's JSON
    envelope (gateway HTML, empty) get a type derived from `status` and the text itself."""
    fallback_type = _ERROR_TYPES_BY_STATUS.get(
        status, "invalid_request_error" if 400 <= status < 500 else "api_error"
    )
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error.get("type") or fallback_type), str(error["message"])
    text = data.decode("utf-8", "replace").strip()[:ERROR_BODY_MAX_CHARS]
    return fallback_type, text or f"upstream returned HTTP {status}"
