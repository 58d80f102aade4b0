"""The /v1 endpoints: validate the body, build the reply, hand it to delivery.

Each handler runs after routing and authentication (routes.py), so it only deals with its
own API's body shape: the real API's rules (strict/) before the fault is chosen, so a
refused body uses up no fault.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from fakeupstream import anthropic_wire, openai_wire, strict
from fakeupstream.delivery import (
    BadRequest,
    Exchange,
    answer_early_fault,
    send_json,
    send_stream,
)
from fakeupstream.faults import FaultKind
from fakeupstream.replies import (
    Reply,
    ToolCall,
    chosen_tool_name,
    estimate_prompt_tokens,
    reply_tokens,
    requested_tokens,
)
from fakeupstream.structured import (
    instance_json,
    json_tokens,
    requested_schema,
    tool_arguments_json,
)


async def chat_completions(ex: Exchange) -> None:
    """`POST /v1/chat/completions`: a chat.completion, or its chunk stream."""
    body = _require_chat_body(ex.body)
    strict.check_chat(body)
    if await answer_early_fault(ex):
        return
    reply = _build_reply(ex, body["messages"][0], "chatcmpl-fake-", "call_fake_")
    if body.get("stream") is True:
        options = body.get("stream_options")
        include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
        await send_stream(ex, openai_wire.completion_stream(reply, include_usage))
    else:
        await send_json(ex, openai_wire.completion_body(reply))


async def messages(ex: Exchange) -> None:
    """`POST /v1/messages`: an Anthropic message, or its event stream."""
    strict.check_messages(ex.body)
    body = _require_chat_body(ex.body)
    if await answer_early_fault(ex):
        return
    # The cache key covers the system prompt too: Anthropic keeps it outside `messages`.
    first = [body.get("system"), body["messages"][0]]
    reply = _build_reply(ex, first, "msg_fake_", "toolu_fake_")
    if body.get("stream") is True:
        await send_stream(ex, anthropic_wire.message_stream(reply))
    else:
        await send_json(ex, anthropic_wire.message_body(reply))


async def count_tokens(ex: Exchange) -> None:
    """`POST /v1/messages/count_tokens`: `{"input_tokens": N}`, N counted as a message's
    `usage.input_tokens` is (replies.estimate_prompt_tokens)."""
    strict.check_count_tokens(ex.body)
    if await answer_early_fault(ex):
        return
    counted = estimate_prompt_tokens(ex.body["messages"], ex.body.get("system"))
    await send_json(ex, orjson.dumps({"input_tokens": counted}))


async def embeddings(ex: Exchange) -> None:
    """`POST /v1/embeddings`: one deterministic vector per input."""
    body = ex.body
    if not isinstance(body, Mapping) or not isinstance(body.get("model"), str):
        raise BadRequest("'model' is required")
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs:
        raise BadRequest("'input' must be a string or a non-empty list")
    encoding_format = body.get("encoding_format") or "float"
    if encoding_format not in ("float", "base64"):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'")
    if await answer_early_fault(ex):
        return
    await send_json(ex, openai_wire.embeddings_body(inputs, body["model"], encoding_format))


async def list_models(ex: Exchange) -> None:
    """`GET /v1/models`."""
    if await answer_early_fault(ex):
        return
    await send_json(ex, openai_wire.models_body(ex.state.settings.models, int(time.time())))


def check_model(ex: Exchange) -> bool:
    """Answer 404 when the profile serves a fixed model list without the requested model."""
    served = ex.state.settings.models
    model = ex.body.get("model") if isinstance(ex.body, Mapping) else None
    if not served or not isinstance(model, str) or model in served:
        return True
    ex.send_error(404, f"The model `{model}` does not exist or you do not have access to it.")
    return False


def _require_chat_body(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise BadRequest("the request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("'model' is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    try:
        requested_tokens(body, 1)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return body


def _build_reply(ex: Exchange, first_message: Any, id_prefix: str, call_prefix: str) -> Reply:
    body, settings, state = ex.body, ex.state.settings, ex.state
    messages: Sequence[Any] = body["messages"]
    prompt_tokens = estimate_prompt_tokens(messages, body.get("system"))
    tool_name = chosen_tool_name(body)
    tool_call = None
    if tool_name is not None:
        arguments = tool_arguments_json(body, tool_name)
        tool_call = ToolCall(state.next_id(call_prefix), tool_name, arguments)
    reply_length = requested_tokens(body, settings.reply_tokens)
    tokens = () if tool_call else reply_tokens(settings.name, reply_length)
    schema = requested_schema(body)
    ignore_format = ex.fault is not None and ex.fault.kind is FaultKind.IGNORE_FORMAT
    if tool_call is None and schema is not None and not ignore_format:
        tokens = json_tokens(instance_json(schema))
    reply = Reply(
        id=state.next_id(id_prefix),
        model=body["model"],
        created_s=int(time.time()),
        tokens=tokens,
        tool_call=tool_call,
        prompt_tokens=prompt_tokens,
        cached_tokens=state.cached_tokens(prompt_tokens, first_message),
    )
    state.count_usage(body.get("user"), reply.prompt_tokens, reply.completion_tokens)
    return reply
