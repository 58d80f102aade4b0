"""An Anthropic Messages API request (`POST /v1/messages`) as a chat-completions body, so
that it routes through the chat path unchanged (SPEC R-API-9): `to_chat_body`. What
becomes of each top-level field is decided in one table, `FIELDS`, as the Anthropic
upstream adapter (`gateway.upstream.providers.anthropic`) decides the other way round;
content blocks are `gateway.api.anthropic.blocks`, tools `gateway.api.anthropic.tools`.
Fields only an Anthropic upstream reads (`thinking`, `top_k`, `cache_control` on content
parts and tools) are checked and kept as extra chat fields, and `without_anthropic_extras`
removes them from the body that is routed and sent to OpenAI-style upstreams; an
Anthropic-style upstream gets the client's own request instead
(gateway/upstream/providers/anthropic_native.py). Every refusal is a
`MessagesRequestError` naming the Anthropic field, raised before any upstream call. Pure:
no Django, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gateway.api.anthropic.blocks import MessagesRequestError, refuse, to_messages
from gateway.api.anthropic.tools import tools_and_choice
from gateway.request_path.params import (
    MAX_STOP_SEQUENCES,
    BadParam,
    Checker,
    boolean,
    integer,
    number_between,
)
from gateway.upstream.providers.anthropic import MIN_THINKING_BUDGET

__all__ = [
    "FIELDS",
    "ChatRequest",
    "MessagesRequestError",
    "to_chat_body",
    "without_anthropic_extras",
]

Handling = Literal["translate", "pass", "drop", "refuse"]

# Every Messages API field and what the chat body makes of it. "translate": to_chat_body
# expresses it. "pass": Switchyard's own routing fields, copied as they are. "drop": losing
# it changes no answer. "refuse": a 400 naming it, unless absent or at a value that asks for
# nothing (_NEUTRAL_VALUES). Fields not listed are dropped, as the Responses translation
# drops what it does not name: Claude Code and the SDK add beta fields faster than this
# table can follow (Claude Code sends `context_management` with every thinking request),
# and passing them on would send them to OpenAI-style upstreams, which refuse unknown
# fields.
FIELDS: dict[str, Handling] = {
    "model": "translate",
    "max_tokens": "translate",
    "messages": "translate",
    "system": "translate",  # a leading system message
    "stop_sequences": "translate",  # stop; more than MAX_STOP_SEQUENCES is refused
    "stream": "translate",
    "temperature": "translate",
    "top_p": "translate",
    "top_k": "translate",  # an extra field, which the Anthropic adapter sends on
    "metadata": "translate",  # user_id -> user and the session id
    "tools": "translate",  # custom tools only: server tools are refused
    "tool_choice": "translate",
    "thinking": "translate",  # reasoning_effort, and the original as an extra field
    "output_config": "translate",  # effort -> reasoning_effort, format -> response_format
    "models": "pass",
    "provider": "pass",
    "routing": "pass",
    "residency": "pass",
    "session_id": "pass",
    "container": "refuse",  # an Anthropic-hosted code execution container
    "mcp_servers": "refuse",  # remote MCP servers that Anthropic's servers call
    "inference_geo": "refuse",  # residency: Switchyard's own `residency` says it
    "thread": "refuse",  # conversation state held on Anthropic's servers
    "compaction": "refuse",  # asks for a `compaction` block only Anthropic writes
    # "auto" and "standard_only" choose between Anthropic's capacity pools; Switchyard has
    # one and serves both requests the same, so nothing is lost.
    "service_tier": "drop",
    # Edits Anthropic makes to the context near its window (clearing old thinking or tool
    # results). Without them the model sees the whole context, which the context-window
    # filter routes for; Claude Code sends it whenever thinking is on.
    "context_management": "drop",
    "cache_control": "drop",  # automatic caching: cost, not the answer
    "speed": "drop",  # a throughput mode of Anthropic's
    "diagnostics": "drop",  # Anthropic's prompt-cache miss report
    "user_profile_id": "drop",  # Anthropic-side billing attribution
    "workspace_id": "drop",  # the Switchyard key chooses the workspace
    "billing_policy": "drop",  # who Anthropic bills
    "fallback_credit_token": "drop",  # an Anthropic billing credit for a retry
    # Anthropic's retry on other models when one declines; Switchyard's own fallbacks
    # (`models`, routes, presets) apply instead.
    "fallbacks": "drop",
}
_NEUTRAL_VALUES: dict[str, Any] = {"mcp_servers": [], "inference_geo": "global"}
_REFUSALS = {
    "container": "code execution containers run on Anthropic's servers; Switchyard cannot "
    "serve them",
    "mcp_servers": "the MCP connector runs on Anthropic's servers; connect MCP servers in "
    "the client and declare their tools as custom tools",
    "inference_geo": "Switchyard chooses regions by its `residency` field and the "
    "workspace's policy; send `residency` instead",
    "thread": "Switchyard does not store conversations; send the whole conversation in `messages`",
    "compaction": "compaction blocks are written by Anthropic's servers only",
}
ANTHROPIC_EXTRAS = ("thinking", "top_k")
# thinking.budget_tokens -> reasoning_effort: the Anthropic adapter's table read backwards
# (it sends "high" as 16,384 tokens), floored at "medium" so the smart tiers classify it
# hard (R-TIER-2) even where `thinking` is not read. "high" for every budget would ask an
# OpenAI reasoning model for far more thinking than a 1,024-token budget asked for.
HIGH_EFFORT_BUDGET = 16384
# Anthropic's effort default is "high", so adaptive thinking without one asks for that.
DEFAULT_EFFORT = "high"
# output_config.effort -> reasoning_effort; Anthropic's "max" is chat's highest, "xhigh".
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
_THINKING_TYPES = ("enabled", "disabled", "adaptive", "between_tools")
MAX_TOKENS = integer(minimum=1)
THINKING_BUDGET = integer(minimum=MIN_THINKING_BUDGET)
TOP_K = integer(minimum=0)
UNIT_INTERVAL = number_between(0, 1)  # Anthropic's range for temperature and top_p


@dataclass(frozen=True, slots=True)
class ChatRequest:
    body: dict[str, Any]  # the chat-completions body to validate and route
    echo: dict[str, Any]  # what the Anthropic answer reports: the requested model


def to_chat_body(body: dict[str, Any]) -> ChatRequest:
    """A Messages request as a chat-completions body. Raises MessagesRequestError naming
    the Anthropic field for anything the chat path cannot serve as asked."""
    _refuse_unservable(body)
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise refuse("model", "is required: a non-empty string")
    if body.get("max_tokens") is None:
        raise refuse("max_tokens", "is required: a positive integer")
    _check(MAX_TOKENS, body["max_tokens"], "max_tokens")
    chat: dict[str, Any] = {
        "model": model,
        "messages": to_messages(body.get("system"), body.get("messages")),
        "max_tokens": body["max_tokens"],
    }
    for name, checker in (
        ("temperature", UNIT_INTERVAL),
        ("top_p", UNIT_INTERVAL),
        ("top_k", TOP_K),
        ("stream", boolean),
    ):
        if body.get(name) is not None:
            _check(checker, body[name], name)
            chat[name] = body[name]
    chat.update(_stop(body.get("stop_sequences")))
    chat.update(tools_and_choice(body))
    chat.update(_reasoning(body, body["max_tokens"]))
    chat.update(_output_format(body.get("output_config")))
    for name, handling in FIELDS.items():
        if handling == "pass" and name in body:
            chat[name] = body[name]
    chat.update(_identity(body.get("metadata"), chat))
    return ChatRequest(body=chat, echo={"model": model})


def _refuse_unservable(body: dict[str, Any]) -> None:
    for name, handling in FIELDS.items():
        value = body.get(name)
        if handling == "refuse" and value is not None and value != _NEUTRAL_VALUES.get(name):
            raise refuse(name, _REFUSALS[name])


def _check(checker: Checker, value: Any, param: str) -> None:
    try:
        checker(value, param)
    except BadParam as exc:
        raise MessagesRequestError(str(exc), exc.param) from None


def _stop(stop_sequences: Any) -> dict[str, Any]:
    """`stop`, refusing more sequences than chat takes: dropping some would let the answer
    run past a sequence the client asked to stop at."""
    if stop_sequences is None or stop_sequences == []:
        return {}
    if not isinstance(stop_sequences, list):
        raise refuse("stop_sequences", "must be an array of strings")
    for index, sequence in enumerate(stop_sequences):
        if not isinstance(sequence, str):
            raise refuse(f"stop_sequences[{index}]", "must be a string")
    if len(stop_sequences) > MAX_STOP_SEQUENCES:
        reason = (
            f"Switchyard serves at most {MAX_STOP_SEQUENCES} stop sequences, the most "
            "OpenAI-style upstreams take"
        )
        raise refuse("stop_sequences", reason)
    return {"stop": list(stop_sequences)}


def _identity(metadata: Any, chat: dict[str, Any]) -> dict[str, Any]:
    """`metadata.user_id` as chat `user` (the end-user id both adapters send on) and as the
    session id (R-EXE-7), unless the client sent Switchyard's own `session_id`. Detection
    would read `metadata.user_id` itself, but `metadata` cannot travel: OpenAI refuses it
    without `store: true`. `session_id` is stripped by every upstream adapter."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise refuse("metadata", "must be an object")
    user_id = metadata.get("user_id")
    if user_id is None or user_id == "":
        return {}
    if not isinstance(user_id, str):
        raise refuse("metadata.user_id", "must be a string")
    identity = {"user": user_id}
    if chat.get("session_id") is None:
        identity["session_id"] = user_id
    return identity


def _reasoning(body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """chat `reasoning_effort` from `output_config.effort` or `thinking`, and `thinking`
    itself kept for an Anthropic upstream (the adapter prefers it to reasoning_effort).
    What only Anthropic forbids while thinking (a temperature other than 1, a forced tool
    choice) is left to the Anthropic adapter, which refuses it naming the field, so that
    another endpoint may serve the request."""
    thinking, config = body.get("thinking"), body.get("output_config")
    if config is not None and not isinstance(config, dict):
        raise refuse("output_config", "must be an object")
    effort = (config or {}).get("effort")
    if effort is not None and effort not in _EFFORTS:
        raise refuse("output_config.effort", f"must be one of {', '.join(_EFFORTS)}")
    if thinking is None:
        return {"reasoning_effort": _EFFORTS[effort]} if effort else {}
    if not isinstance(thinking, dict) or thinking.get("type") not in _THINKING_TYPES:
        raise refuse("thinking.type", f"must be one of {', '.join(_THINKING_TYPES)}")
    chat: dict[str, Any] = {"thinking": thinking}
    if thinking["type"] == "disabled":
        return chat
    if thinking["type"] == "enabled":
        _check(THINKING_BUDGET, thinking.get("budget_tokens"), "thinking.budget_tokens")
        budget: int = thinking["budget_tokens"]
        if budget >= max_tokens:
            raise refuse("thinking.budget_tokens", "must be less than `max_tokens`")
        default = "high" if budget >= HIGH_EFFORT_BUDGET else "medium"
    else:  # adaptive, between_tools: the model decides how much, at the requested effort
        default = DEFAULT_EFFORT
    chat["reasoning_effort"] = _EFFORTS[effort] if effort else default
    return chat


def _output_format(config: Any) -> dict[str, Any]:
    """`output_config.format` (a JSON schema for the answer) as chat `response_format`."""
    form = config.get("format") if isinstance(config, dict) else None
    if form is None:
        return {}
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        raise refuse("output_config.format.type", 'must be "json_schema"')
    schema = form.get("schema")
    if not isinstance(schema, dict):
        raise refuse("output_config.format.schema", "must be an object")
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    }


def without_anthropic_extras(chat: dict[str, Any]) -> dict[str, Any]:
    """The chat body without the fields only Anthropic reads (ANTHROPIC_EXTRAS, and
    `cache_control` on content parts and tools), for an OpenAI-style upstream: OpenAI and
    strict compatible providers (Fireworks, among others) answer them with a 400."""
    body = {key: value for key, value in chat.items() if key not in ANTHROPIC_EXTRAS}
    body["messages"] = [_unmarked_message(message) for message in chat.get("messages") or []]
    if chat.get("tools"):
        body["tools"] = [_unmarked(tool) for tool in chat["tools"]]
    return body


def _unmarked_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": [_unmarked(part) for part in content]}


def _unmarked(item: Any) -> Any:
    if not isinstance(item, dict) or "cache_control" not in item:
        return item
    return {key: value for key, value in item.items() if key != "cache_control"}
