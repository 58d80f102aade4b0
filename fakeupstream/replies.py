"""What the fake answers, independent of wire format: reply tokens, token counts, tool calls.

Both the OpenAI and the Anthropic renderers take a `Reply` built here, so the two API
styles always agree on the text, the usage numbers and when a tool gets called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from fakeupstream.profiles import MAX_REPLY_TOKENS

# Tool calls always ask for the same thing, so tests can assert the exact arguments.
TOOL_ARGUMENTS_JSON = '{"location": "Paris"}'
# Argument fragments per streamed tool-call chunk, in characters (OpenAI sends a few
# characters per chunk too).
TOOL_FRAGMENT_CHARS = 5
# Characters per prompt token for the usage estimate (the usual rule of thumb for English).
CHARS_PER_TOKEN = 4
# Stands in for the per-token string while a stream event is rendered once (render_each).
_SLOT = "\x1fslot\x1f"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments_json: str

    def fragments(self) -> list[str]:
        """The arguments cut into the pieces a stream sends one by one."""
        text, step = self.arguments_json, TOOL_FRAGMENT_CHARS
        return [text[i : i + step] for i in range(0, len(text), step)]


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """A reply as server-sent events, split by when they may be sent.

    `lead` goes out with the first token (after the time to first token), `tokens` one per
    token or tool-argument fragment (paced), `tail` right after the last token.
    """

    lead: list[bytes]
    tokens: list[bytes]
    tail: list[bytes]


@dataclass(frozen=True, slots=True)
class Reply:
    id: str
    model: str
    created_s: int
    tokens: tuple[str, ...]  # the reply text, one entry per token; empty for a tool call
    tool_call: ToolCall | None
    prompt_tokens: int
    cached_tokens: int

    @property
    def text(self) -> str:
        return "".join(self.tokens)

    @property
    def completion_tokens(self) -> int:
        return len(self.tokens) if self.tool_call is None else len(self.tool_call.fragments())


@lru_cache(maxsize=256)  # a profile answers with few distinct lengths; 20 is typical
def reply_tokens(name: str, count: int) -> tuple[str, ...]:
    """`This is a fake reply from <name>.` repeated and cut to exactly `count` tokens.

    A token is a word with its leading space, so the tokens join back into the text.
    """
    words = f"This is a fake reply from {name}.".split()
    count = min(count, MAX_REPLY_TOKENS)
    return tuple((" " if i else "") + words[i % len(words)] for i in range(count))


def render_each(render: Callable[[str], bytes], pieces: Sequence[str]) -> list[bytes]:
    """`[render(piece) for piece in pieces]`, rendering the event around the piece once.

    A stream sends one event per token; building and encoding the same envelope for each
    of them was a fifth of the fake's CPU time per stream.
    """
    before, slot, after = render(_SLOT).partition(orjson.dumps(_SLOT))
    if not slot:  # render() did not embed the piece as a JSON string; do it the slow way
        return [render(piece) for piece in pieces]
    return [before + orjson.dumps(piece) + after for piece in pieces]


def requested_tokens(body: Mapping[str, Any], default: int) -> int:
    """The reply length: `max_completion_tokens` or `max_tokens` when given, else `default`.

    Raises ValueError when the given limit is not a positive integer.
    """
    for field in ("max_completion_tokens", "max_tokens"):
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"'{field}' must be a positive integer")
        return value
    return default


def estimate_prompt_tokens(messages: Sequence[Any], system: Any = None) -> int:
    """Characters of all message text (and the Anthropic `system`) divided by 4, at least 1."""
    chars = _text_chars(system) + sum(_text_chars(m.get("content")) for m in _dicts(messages))
    return max(chars // CHARS_PER_TOKEN, 1)


def _text_chars(content: Any) -> int:
    """Characters of text in a content value: a string, or a list of parts/blocks."""
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return 0
    total = 0
    for part in _dicts(content):
        if isinstance(part.get("text"), str):
            total += len(part["text"])
        total += _text_chars(part.get("content"))  # Anthropic tool_result blocks nest content
    return total


def chosen_tool_name(body: Mapping[str, Any]) -> str | None:
    """The tool to call, or None for a text reply.

    A tool is called when the request declares tools and either `tool_choice` forces one
    (a named function, `required` / Anthropic `any`) or the last message is a user turn
    whose text mentions "weather". A tool result as the last message gets a text reply, so
    a client's tool loop ends.
    """
    tools = [tool for tool in _dicts(body.get("tools") or []) if _tool_name(tool)]
    if not tools:
        return None
    choice = body.get("tool_choice")
    if choice == "none" or (isinstance(choice, Mapping) and choice.get("type") == "none"):
        return None
    forced = _forced_tool_name(choice)
    if forced:
        return forced
    if choice == "required" or (isinstance(choice, Mapping) and choice.get("type") == "any"):
        return _tool_name(tools[0])
    return _tool_name(tools[0]) if "weather" in _last_user_text(body) else None


def _forced_tool_name(choice: Any) -> str | None:
    if not isinstance(choice, Mapping):
        return None
    if choice.get("type") == "function":  # OpenAI: {"type": "function", "function": {"name"}}
        function = choice.get("function")
        return function.get("name") if isinstance(function, Mapping) else None
    if choice.get("type") == "tool":  # Anthropic: {"type": "tool", "name"}
        return choice.get("name")
    return None


def _tool_name(tool: Mapping[str, Any]) -> str | None:
    """OpenAI tools nest the name under `function`; Anthropic tools carry it at the top."""
    function = tool.get("function")
    if isinstance(function, Mapping):
        return function.get("name")
    return tool.get("name")


def _last_user_text(body: Mapping[str, Any]) -> str:
    """Lower-cased text of the last message when it is a user turn; '' otherwise."""
    messages = list(_dicts(body.get("messages") or []))
    if not messages or messages[-1].get("role") != "user":
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content.lower()
    texts = [p["text"] for p in _dicts(content or []) if p.get("type") == "text" and "text" in p]
    return " ".join(str(text) for text in texts).lower()


def _dicts(items: Any) -> list[Mapping[str, Any]]:
    """The mapping items of a JSON list; anything else in it is ignored."""
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, Mapping)]
