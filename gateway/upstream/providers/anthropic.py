"""Anthropic Messages API adapter: translates an OpenAI chat-completions request into an
Anthropic `POST /messages` request, and an Anthropic response or error back into OpenAI
shapes. Pure translation: no network, no Django, no clock. The answer side (message,
stream, error) lives in `gateway.upstream.providers.anthropic_stream` and is re-exported here.

What becomes of each OpenAI field is decided in one table, `FIELDS`. Request translation
raises `ValueError` (message names the offending field, e.g. `messages[3]`) for input
Anthropic cannot express; the gateway answers those with a 400. A conversation's messages
become Anthropic turns in `anthropic_turns`; its tools, tool choice and `response_format`
become Anthropic tools in `anthropic_tools`.
"""

from __future__ import annotations

from typing import Any, Literal

from gateway.upstream.providers.anthropic_stream import (
    StreamTranslator,
    parse_error,
    parse_response,
)
from gateway.upstream.providers.anthropic_tools import FORCED_CHOICES, translate_tools
from gateway.upstream.providers.anthropic_turns import translate_messages
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
    "response_format": "translate",  # a forced answer tool (anthropic_tools)
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


def build_request(
    body: JSONObject, upstream_model: str, api_key: str, *, stream: bool
) -> tuple[dict[str, str], bytes]:
    """OpenAI chat-completions body -> (headers, JSON bytes) for POST {base_url}/messages.

    Raises ValueError naming the field for requests Anthropic cannot serve (a refused field
    of FIELDS, malformed tool calls or content parts, unsupported tools or roles)."""
    _refuse_untranslatable(body)
    system, messages = translate_messages(body.get("messages") or [])
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
    payload.update(translate_tools(body, messages))
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
    if (payload.get("tool_choice") or {}).get("type") in FORCED_CHOICES:
        client_choice = body.get("tool_choice")
        forced_by_client = client_choice == "required" or isinstance(client_choice, dict)
        cause = "tool_choice" if forced_by_client else "response_format"
        raise ValueError(f"{field}: Anthropic cannot think while {cause} forces a tool call")
    if payload.get("temperature") not in (None, 1):
        raise ValueError(f"{field}: Anthropic thinks only at temperature 1")
    if payload.get("top_p") is not None and payload["top_p"] < MIN_THINKING_TOP_P:
        raise ValueError(f"{field}: Anthropic thinks only with top_p >= {MIN_THINKING_TOP_P}")
