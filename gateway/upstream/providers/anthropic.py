"""Anthropic Messages API adapter: translates an OpenAI chat-completions request into an
Anthropic `POST /messages` request, and an Anthropic response or error back into OpenAI
shapes. Pure translation: no network, no Django, no clock. The answer side (message,
stream, error) lives in `gateway.upstream.providers.anthropic_stream` and is re-exported here.

What becomes of each OpenAI field is decided in one table, `FIELDS`. Request translation
raises `ValueError` (message names the offending field, e.g. `messages[3]`) for input
Anthropic cannot express; the gateway answers those with a 400.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import orjson

from gateway.upstream.providers.anthropic_stream import (
    ANSWER_TOOL_PREFIX,
    StreamTranslator,
    is_answer_tool,
    parse_error,
    parse_response,
)
from gateway.upstream.providers.openai import compact_json

__all__ = [
    "API_VERSION",
    "FIELDS",
    "StreamTranslator",
    "build_request",
    "parse_error",
    "parse_response",
]

JSONObject = dict[str, Any]
Handling = Literal["translate", "drop", "refuse"]

API_VERSION = "2023-06-01"
# Anthropic requires max_tokens and OpenAI clients usually omit it; 4096 fits every Claude model.
DEFAULT_MAX_TOKENS = 4096
MAX_TEMPERATURE = 1  # Anthropic's range is 0-1, OpenAI's 0-2
MAX_TOOL_NAME_CHARS = 64  # Anthropic's (and OpenAI's) limit; tool names are [a-zA-Z0-9_-]

# Every OpenAI chat-completions field, and what an Anthropic request makes of it, so that
# nothing is lost without a decision. "translate": build_request expresses it. "drop":
# Anthropic has nothing like it and losing it changes no answer (peers such as LiteLLM and
# OpenRouter drop these too). "refuse": losing it would change the answer, so build_request
# raises ValueError naming it (the attempt fails as unsupported_request and another endpoint
# may serve) unless it is absent or holds its neutral value (_NEUTRAL_VALUES). Fields not
# listed (Switchyard's routing fields, other vendors' extensions) are not sent: Anthropic
# answers unknown fields with a 400.
FIELDS: dict[str, Handling] = {
    "model": "translate",  # replaced by the endpoint's upstream model
    "messages": "translate",
    "max_tokens": "translate",
    "max_completion_tokens": "translate",
    "temperature": "translate",  # above MAX_TEMPERATURE is refused
    "top_p": "translate",
    "stop": "translate",  # stop_sequences
    "stream": "translate",
    "tools": "translate",
    "tool_choice": "translate",
    "parallel_tool_calls": "translate",  # disable_parallel_tool_use
    "response_format": "translate",  # a forced answer tool (_answer_tool)
    "reasoning_effort": "translate",  # thinking with a budget (_thinking)
    "user": "translate",  # metadata.user_id
    "safety_identifier": "translate",  # metadata.user_id when `user` is absent
    "thinking": "translate",  # Anthropic's own field, passed through
    "top_k": "translate",  # Anthropic's own field, passed through
    "n": "refuse",
    "logprobs": "refuse",
    "top_logprobs": "refuse",
    "logit_bias": "refuse",
    "presence_penalty": "refuse",
    "frequency_penalty": "refuse",
    "audio": "refuse",
    "modalities": "refuse",
    "web_search_options": "refuse",  # an answer without the search is a different answer
    "moderation": "refuse",  # OpenAI's moderation would silently not run
    "functions": "refuse",  # the deprecated tools; their answers would need `function_call`
    "function_call": "refuse",
    "seed": "drop",  # best effort at OpenAI too
    "store": "drop",  # OpenAI-side storage of the completion
    "metadata": "drop",  # tags for OpenAI's stored completions; Anthropic's takes only user_id
    "service_tier": "drop",  # OpenAI capacity tiers
    "stream_options": "drop",  # the translated stream always reports usage
    "prediction": "drop",  # a latency hint: the answer is the same without it
    "prompt_cache_key": "drop",  # cache routing hints; Anthropic caching is explicit
    "prompt_cache_retention": "drop",
    "prompt_cache_options": "drop",
    "verbosity": "drop",  # a length hint, like an instruction in the prompt
}
# Values of refused fields that ask for nothing Anthropic lacks (clients send defaults).
_NEUTRAL_VALUES: dict[str, Any] = {
    "n": 1,
    "logprobs": False,
    "top_logprobs": 0,
    "logit_bias": {},
    "presence_penalty": 0,
    "frequency_penalty": 0,
    "modalities": ["text"],
    "functions": [],
}
_PASSTHROUGH_FIELDS = ("temperature", "top_p", "top_k")
# reasoning_effort -> thinking budget_tokens. 1024 is Anthropic's minimum budget; each step
# up quadruples it. "none" and "minimal" do not think: 1024 tokens is more than minimal.
_THINKING_BUDGETS = {
    "none": 0,
    "minimal": 0,
    "low": 1024,
    "medium": 4096,
    "high": 16384,
    "xhigh": 32768,
}
MIN_THINKING_BUDGET = 1024
# Anthropic allows top_p only from 0.95 while thinking, and no temperature but 1.
MIN_THINKING_TOP_P = 0.95

OPENING_USER_TURN = "(conversation start)"
_SYSTEM_ROLES = frozenset({"system", "developer"})
_TOOL_CHOICES: dict[str, JSONObject] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}
_FORCED_CHOICES = frozenset({"any", "tool"})
_UNSAFE_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_ANSWER_TOOL_DESCRIPTION = "Give your final answer as this tool's input."


def build_request(
    body: JSONObject, upstream_model: str, api_key: str, *, stream: bool
) -> tuple[dict[str, str], bytes]:
    """OpenAI chat-completions body -> (headers, JSON bytes) for POST {base_url}/messages.

    Raises ValueError naming the field for requests Anthropic cannot serve (a refused field
    of FIELDS, malformed tool calls or content parts, unsupported tools or roles)."""
    _refuse_untranslatable(body)
    system, messages = _translate_messages(body.get("messages") or [])
    if not messages:  # OpenAI answers a conversation of system prompts alone; Anthropic not
        raise ValueError("messages: Anthropic needs a user or assistant message with content")
    thinking = _thinking(body)
    payload: JSONObject = {
        "model": upstream_model,
        "max_tokens": _max_tokens(body, thinking),
        "messages": messages,
    }
    if system:
        payload["system"] = system
    for field in _PASSTHROUGH_FIELDS:
        if body.get(field) is not None:
            payload[field] = body[field]
    if thinking is not None:
        payload["thinking"] = thinking
    stop = body.get("stop")
    if stop:
        payload["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    user_id = body.get("user") or body.get("safety_identifier")
    if user_id:
        payload["metadata"] = {"user_id": user_id}
    payload.update(_translate_tools(body, messages))
    _check_thinking(payload, body)
    payload["stream"] = stream
    headers = {
        "x-api-key": api_key,
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
    }
    return headers, compact_json(payload)


def _refuse_untranslatable(body: JSONObject) -> None:
    for field, handling in FIELDS.items():
        value = body.get(field)
        if handling == "refuse" and value is not None and value != _NEUTRAL_VALUES.get(field):
            raise ValueError(f"{field}: not supported by Anthropic upstreams")
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and temperature > MAX_TEMPERATURE:
        raise ValueError(f"temperature: Anthropic accepts 0 to {MAX_TEMPERATURE}")


def _max_tokens(body: JSONObject, thinking: JSONObject | None) -> int:
    limit = _client_limit(body)
    if limit is not None:
        return limit
    # Anthropic rejects budget_tokens >= max_tokens, so the default must leave room for the
    # answer on top of the thinking budget.
    return DEFAULT_MAX_TOKENS + int((thinking or {}).get("budget_tokens") or 0)


def _client_limit(body: JSONObject) -> int | None:
    for field in ("max_completion_tokens", "max_tokens"):
        if body.get(field) is not None:
            return int(body[field])
    return None


def _thinking(body: JSONObject) -> JSONObject | None:
    """Anthropic `thinking`: the client's own, else one from `reasoning_effort`."""
    thinking = body.get("thinking")
    if thinking is not None:
        if not isinstance(thinking, dict):
            raise ValueError("thinking: must be an object")
        return thinking
    effort = body.get("reasoning_effort")
    if effort is None:
        return None
    if not isinstance(effort, str) or effort not in _THINKING_BUDGETS:
        raise ValueError(f"reasoning_effort: unsupported value {effort!r}")
    budget = _THINKING_BUDGETS[effort]
    if not budget:
        return None
    limit = _client_limit(body)
    if limit is not None:
        # OpenAI counts reasoning inside the completion limit, as Anthropic's max_tokens
        # counts thinking; the budget must stay below it.
        budget = min(budget, limit - 1)
        if budget < MIN_THINKING_BUDGET:
            raise ValueError(
                f"reasoning_effort: max_tokens leaves no room for Anthropic's minimum "
                f"thinking budget of {MIN_THINKING_BUDGET} tokens"
            )
    return {"type": "enabled", "budget_tokens": budget}


def _check_thinking(payload: JSONObject, body: JSONObject) -> None:
    """Refuse what Anthropic refuses while thinking, naming the field that asked for it."""
    if (payload.get("thinking") or {}).get("type") in (None, "disabled"):
        return
    field = "thinking" if body.get("thinking") is not None else "reasoning_effort"
    if (payload.get("tool_choice") or {}).get("type") in _FORCED_CHOICES:
        client_choice = body.get("tool_choice")
        forced_by_client = client_choice == "required" or isinstance(client_choice, dict)
        cause = "tool_choice" if forced_by_client else "response_format"
        raise ValueError(f"{field}: Anthropic cannot think while {cause} forces a tool call")
    if payload.get("temperature") not in (None, 1):
        raise ValueError(f"{field}: Anthropic thinks only at temperature 1")
    if payload.get("top_p") is not None and payload["top_p"] < MIN_THINKING_TOP_P:
        raise ValueError(f"{field}: Anthropic thinks only with top_p >= {MIN_THINKING_TOP_P}")


def _translate_messages(messages: Any) -> tuple[str, list[JSONObject]]:
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


def _translate_tools(body: JSONObject, turns: list[JSONObject]) -> JSONObject:
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
    if choice is not None and choice["type"] in _FORCED_CHOICES:
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
