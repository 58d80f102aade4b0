"""A chat completion as the Anthropic Messages API's `message` object (`to_message`), and
the vocabulary it and the stream (`gateway.api.anthropic.stream`) use: stop reasons, usage,
tool_use ids. The answer's text comes first as one text block, then each tool call as a
`tool_use` block, the order Claude answers in. Reasoning text some chat upstreams add
(`reasoning_content`) is not shown: an Anthropic thinking block must carry a signature
only Anthropic can make, and clients send thinking back, where it is dropped anyway. (Its
error envelope is gateway/errors.py's `render_anthropic_error`.) Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

JSONObject = dict[str, Any]

# chat finish_reason -> Anthropic stop_reason; a missing or unknown reason ended the turn.
STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",  # the deprecated single-function form
    "content_filter": "refusal",
}
# Anthropic refuses tool_use ids outside these characters, and the client sends the ids
# back in its next request, which may be routed to Anthropic. Chat upstreams are freer
# (Kimi's `functions.Bash:0`).
_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def to_message(chat: Mapping[str, Any], *, message_id: str, requested_model: str) -> JSONObject:
    """A `chat.completion` as an Anthropic `message` reporting the model that answered
    (the requested one when the completion names none). Tool call arguments that are not
    a JSON object become input `{}`: the turn's other blocks still reach the client, whose
    tool then answers the empty input with an error the model can correct (what a call
    cut off by max_tokens needs anyway)."""
    choices = chat.get("choices")
    choice = _object(choices[0] if isinstance(choices, list) and choices else None)
    message = _object(choice.get("message"))
    calls = message.get("tool_calls")
    content: list[JSONObject] = []
    text = _text_of(message.get("content"))
    refusal = message.get("refusal")
    refused = isinstance(refusal, str) and bool(refusal)
    if refused:
        text += str(refusal)
    if text:
        content.append({"type": "text", "text": text})
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        content.append(_tool_use(call, f"toolu_{message_id}_{index}"))
    stop_sequence = matched_stop(choice)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": chat.get("model") or requested_model,
        "content": content,
        "stop_reason": stop_reason_for(
            choice.get("finish_reason"),
            has_tool_use=any(block["type"] == "tool_use" for block in content),
            refused=refused,
            stop_sequence=stop_sequence,
        ),
        "stop_sequence": stop_sequence,
        "usage": anthropic_usage(_object(chat.get("usage"))),
    }


def stop_reason_for(
    finish_reason: str | None, *, has_tool_use: bool, refused: bool, stop_sequence: str | None
) -> str:
    """Anthropic's stop_reason for a chat answer that ended so. A turn with tool calls that
    says `stop` (some compatible providers do) is `tool_use`: clients run tools on it."""
    if refused:
        return "refusal"
    if stop_sequence is not None:
        return "stop_sequence"
    reason = STOP_REASONS.get(finish_reason if isinstance(finish_reason, str) else "", "end_turn")
    return "tool_use" if reason == "end_turn" and has_tool_use else reason


def matched_stop(choice: Mapping[str, Any]) -> str | None:
    """The stop sequence that ended the answer, when the upstream says which: vLLM puts it
    in the choice's `stop_reason`, SGLang in `matched_stop` (an int there is a stop token,
    not a sequence). OpenAI and the Anthropic adapter say only `stop`, so it is None."""
    if choice.get("finish_reason") != "stop":
        return None
    for field in ("stop_reason", "matched_stop"):
        value = choice.get(field)
        if isinstance(value, str) and value:
            return value
    return None


def anthropic_usage(usage: Mapping[str, Any]) -> JSONObject:
    """Chat usage in Anthropic's terms. Chat `prompt_tokens` counts cached tokens too;
    Anthropic's `input_tokens` does not, so cache reads and writes are taken out. Writes are
    reported only by some providers (LiteLLM's `cache_creation_input_tokens`, OpenRouter's
    `prompt_tokens_details.cache_write_tokens`); elsewhere they are 0."""
    details = _object(usage.get("prompt_tokens_details"))
    cache_read = _count(details.get("cached_tokens"))
    cache_write = _count(usage.get("cache_creation_input_tokens")) or _count(
        details.get("cache_write_tokens")
    )
    prompt = _count(usage.get("prompt_tokens"))
    return {
        "input_tokens": max(prompt - cache_read - cache_write, 0),
        "output_tokens": _count(usage.get("completion_tokens")),
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


def tool_use_id(call_id: Any, fallback: str) -> str:
    """A tool call's id as Anthropic accepts it; `fallback` when the upstream gave none."""
    if not isinstance(call_id, str) or not call_id:
        call_id = fallback
    return _UNSAFE_ID_CHARS.sub("_", call_id)


def _object(value: Any) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a few upstreams answer in text parts
        return "".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return ""


def _tool_use(call: Any, fallback_id: str) -> JSONObject:
    call = _object(call)
    function = _object(call.get("function"))
    return {
        "type": "tool_use",
        "id": tool_use_id(call.get("id"), fallback_id),
        "name": function.get("name") or "",
        "input": tool_input(function.get("arguments")),
    }


def tool_input(arguments: Any) -> JSONObject:
    """Chat tool call arguments (JSON text) as a tool_use input; `{}` unless an object."""
    if isinstance(arguments, dict):  # some compatible upstreams send the object itself
        return arguments
    try:
        parsed = orjson.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except orjson.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
