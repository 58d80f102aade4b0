"""What a request asks for, read from its body alone (SPEC D-14, R-AUTO-2): the local
deterministic workload classifier and the shape facts routing needs (message text, images,
an input-token estimate). Pure: keyword and structure rules, no model call, no download.

Both request forms are read: Chat Completions `messages` and the Responses API `input`
(a string, or a list of items) with its `instructions`. Malformed parts are skipped, never
raised on: the gateway validates bodies before routing reads them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

# Token estimate without a tokenizer: about four characters per token for Latin-script text,
# plus the per-message framing chat templates add, plus a flat cost per image (OpenAI's
# high-detail 512px tile price; real costs vary by provider and image size).
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
TOKENS_PER_IMAGE = 765

IMAGE_PART_TYPES = frozenset({"image_url", "input_image"})

# Signals of code in the last user message: fenced blocks, tracebacks and compiler output,
# and lines that start like a definition. Matched on the raw text (multiline).
_CODE_SHAPES = re.compile(
    r"```"
    r"|Traceback \(most recent call last\)"
    r"|^\s*File \"[^\"]+\", line \d+"
    r"|\b\w+(?:Error|Exception): "
    r"|^diff --git |^panic: |^\s*at [\w$.]+\([\w$]+\.(?:java|kt|scala):\d+\)"
    r"|^\s*(?:def|class|async def)\s+\w+"
    r"|^\s*(?:function|func|fn)\s+\w+\s*\("
    r"|^\s*#include\s*[<\"]"
    r"|^\s*(?:const|let|var)\s+\w+\s*=",
    re.MULTILINE,
)
# Words naming code work, matched case-insensitively (ambiguous names such as go, rust, java
# or swift are left out on purpose).
_CODE_WORDS = re.compile(
    r"\b(?:python|javascript|typescript|golang|c\+\+|sql|bash|regex|regexp|refactor\w*"
    r"|compil(?:e|er|ing)|debug\w*|stack ?trace|segfault|unit tests?|source code"
    r"|(?:this|my|the following|write|some) code)\b",
    re.IGNORECASE,
)
_TRANSLATION = re.compile(
    r"\b(?:translat\w*|übersetz\w*|tradu\w*|vertaal\w*|vertaling\w*|przetłumacz\w*"
    r"|tłumacz\w*)",
    re.IGNORECASE,
)
_SUMMARISATION = re.compile(
    r"\b(?:summar\w*|sum up|tl;?dr|zusammenfass\w*|riassum\w*|riassunt\w*|sintetizz\w*"
    r"|résum\w*|resumen|resuma|resumo|resumir|samenvat\w*|streszcz\w*|streść|podsumuj\w*"
    r"|podsumowani\w*)"
    r"|\bfass\w*\b[^.?!\n]*\bzusammen\b"  # German separable verb: "Fasse … zusammen"
    r"|\bvat\b[^.?!\n]*\bsamen\b",  # Dutch: "Vat … samen"
    re.IGNORECASE,
)
_REASONING = re.compile(
    r"\bstep[- ]by[- ]step\b|\bprove\b|\bproof\b|\bwhy (?:does|do)\b|\bthink (?:hard|carefully)\b"
    r"|\broot cause\b|\bderive\b|\bschritt für schritt\b|\bbeweise\b|\bétape par étape\b"
    r"|\bdémontre[zr]?\b|\bpasso (?:dopo|per|a) passo\b|\bdimostra\w*|\bpaso a paso\b"
    r"|\bdemuestra\b|\bdemostrar\b|\bkrok po kroku\b|\budowodnij\b|\bstap voor stap\b"
    r"|\bbewijs\b",
    re.IGNORECASE,
)


def iter_messages(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every message-like item: `messages`, else the Responses `instructions` (as a system
    message) and `input` (a bare string is one user message)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        yield from (m for m in messages if isinstance(m, Mapping))
        return
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        yield {"role": "system", "content": instructions}
    items = body.get("input")
    if isinstance(items, str):
        yield {"role": "user", "content": items}
    elif isinstance(items, list):
        yield from (item for item in items if isinstance(item, Mapping))


def _parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        return [part for part in content if isinstance(part, Mapping)]
    return []


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one message: string content or its text parts, one per line."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [part["text"] for part in _parts(message) if isinstance(part.get("text"), str)]
    return "\n".join(texts)


def _framing_text(message: Mapping[str, Any]) -> str:
    """Text that reaches the model besides content: tool-call arguments and tool outputs
    (Chat `tool_calls`, Responses `function_call` / `function_call_output` items)."""
    texts = [message.get(key) for key in ("arguments", "output")]
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            texts.append(function.get("arguments"))
    return "".join(text for text in texts if isinstance(text, str))


def count_images(message: Mapping[str, Any]) -> int:
    return sum(1 for part in _parts(message) if part.get("type") in IMAGE_PART_TYPES)


def has_image(body: Mapping[str, Any]) -> bool:
    return any(count_images(message) for message in iter_messages(body))


def has_tools(body: Mapping[str, Any]) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and len(tools) > 0


def estimate_chat_tokens(body: Mapping[str, Any]) -> int:
    """ceil(characters of all message text / 4) + 4 per message + 765 per image.

    Message text is content (strings and text parts) of every role, tool-call arguments and
    tool outputs; tool definitions and JSON schemas are not counted."""
    chars = messages = images = 0
    for message in iter_messages(body):
        messages += 1
        chars += len(message_text(message)) + len(_framing_text(message))
        images += count_images(message)
    return (
        math.ceil(chars / CHARS_PER_TOKEN)
        + TOKENS_PER_MESSAGE * messages
        + (TOKENS_PER_IMAGE * images)
    )


def embedding_tokens(body: Mapping[str, Any]) -> int:
    """Embeddings `input`: ceil(characters / 4) per string; token arrays count exactly."""
    return _input_tokens(body.get("input"))


def _input_tokens(value: Any) -> int:
    if isinstance(value, str):
        return math.ceil(len(value) / CHARS_PER_TOKEN)
    if isinstance(value, list):
        if value and all(isinstance(item, int) for item in value):
            return len(value)
        return sum(_input_tokens(item) for item in value)
    return 0


def requested_output_tokens(body: Mapping[str, Any]) -> int:
    """`max_completion_tokens`, else `max_tokens`, else the Responses `max_output_tokens`;
    0 when none is a positive integer (unknown)."""
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the last message with role `user` ("" when there is none)."""
    text = ""
    for message in iter_messages(body):
        if message.get("role") == "user":
            text = message_text(message)
    return text


def asks_for_structure(body: Mapping[str, Any]) -> bool:
    response_format = body.get("response_format")
    text = body.get("text")  # Responses API: text.format
    if isinstance(text, Mapping):
        response_format = response_format or text.get("format")
    return isinstance(response_format, Mapping) and response_format.get("type") in (
        "json_schema",
        "json_object",
    )


def classify(body: Mapping[str, Any]) -> str:
    """The workload of a chat request, one of routing.engine.types.TASKS.

    First match wins: declared tools → tool_use; a JSON response format → structured_output;
    then the last user message: code shapes or code words → code; a translate verb (en, de,
    fr, it, es, pt, nl, pl) → translation; a summarise verb → summarisation; step-by-step,
    proof or "why does" → reasoning; otherwise general.
    """
    if has_tools(body):
        return "tool_use"
    if asks_for_structure(body):
        return "structured_output"
    text = last_user_text(body)
    if _CODE_SHAPES.search(text) or _CODE_WORDS.search(text):
        return "code"
    for task, pattern in (
        ("translation", _TRANSLATION),
        ("summarisation", _SUMMARISATION),
        ("reasoning", _REASONING),
    ):
        if pattern.search(text):
            return task
    return "general"


def matching_workloads(body: Mapping[str, Any]) -> tuple[str, ...]:
    """Every workload whose rule matches, in `classify`'s order of precedence (its first
    entry is what `classify` returns; empty means general). For the auto router's mix."""
    found = []
    if has_tools(body):
        found.append("tool_use")
    if asks_for_structure(body):
        found.append("structured_output")
    text = last_user_text(body)
    if _CODE_SHAPES.search(text) or _CODE_WORDS.search(text):
        found.append("code")
    for task, pattern in (
        ("translation", _TRANSLATION),
        ("summarisation", _SUMMARISATION),
        ("reasoning", _REASONING),
    ):
        if pattern.search(text):
            found.append(task)
    return tuple(found)
