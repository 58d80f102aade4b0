"""`POST /v1/messages` (SPEC R-API-9; its `count_tokens` is count_tokens.py): Anthropic's
Messages API on the chat path. The request is translated into a chat body
(gateway/api/anthropic/request.py) and goes through the same seven steps as a chat
completion — policy, residency, fallbacks, tiers, auto router, traces. An Anthropic-style
upstream is sent the client's own request and its answer comes back as it sent it
(gateway/upstream/providers/anthropic_native.py), so `cache_control`, `top_k` and earlier
turns' `thinking` blocks reach it; an OpenAI-style upstream gets the chat body, and its
answer is shaped into Anthropic's `message` (response.py) or its event stream
(stream.py). Errors are Anthropic's envelope with the same statuses, and the
`switchyard` facts, which have no place in Anthropic's body, go in `X-Switchyard-*` headers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.http import HttpResponseBase

from gateway.api.anthropic.request import (
    MessagesRequestError,
    to_chat_body,
    without_anthropic_extras,
)
from gateway.api.anthropic.response import to_message
from gateway.api.anthropic.stream import relay_messages
from gateway.api.chat import stream_recorder
from gateway.api.wire import StreamFrames, json_response, sse_response
from gateway.errors import invalid, render_anthropic_error
from gateway.request_path.operation import Finish, Operation, Parsed, Served
from gateway.request_path.parse import validate_chat
from gateway.request_path.record import switchyard_block
from gateway.upstream.attempt import Opened

# The `switchyard` block's facts that fit a header (ASCII, short), in Anthropic answers.
FACT_HEADERS = {
    "model": "X-Switchyard-Model",
    "provider": "X-Switchyard-Provider",
    "endpoint": "X-Switchyard-Endpoint",
    "region": "X-Switchyard-Region",
    "sovereignty_class": "X-Switchyard-Sovereignty-Class",
    "cost_estimate_usd": "X-Switchyard-Cost-Estimate-Usd",
}


def parse_messages(body: dict[str, Any]) -> Parsed:
    try:
        translated = to_chat_body(body)
    except MessagesRequestError as error:
        raise invalid(error.message, param=error.param) from None
    chat = without_anthropic_extras(translated.body)
    validate_chat(chat)  # a backstop: the translation names Anthropic's fields first
    stream = chat.get("stream") is True
    return Parsed(body=chat, stream=stream, echo=translated.echo, native=body)


def render_messages(served: Served) -> HttpResponseBase:
    caller, outcome, finish = served.caller, served.outcome, served.finish
    assert outcome is not None
    assert finish is not None
    assert outcome.target is not None
    if outcome.opened is not None:
        opened = outcome.opened
        response: HttpResponseBase = sse_response(_stream_frames(served, opened, finish))
        facts = switchyard_block(caller, served.record, opened.target, None)
        facts.pop("cost_estimate_usd")  # not known before the stream ends
    else:
        chat = outcome.response or {}
        usage = chat.get("usage")
        facts = switchyard_block(caller, served.record, outcome.target, usage)
        finish(status=200, target=outcome.target, usage=usage)
        answered = outcome.target.endpoint.model  # R-API-6, not the alias the client sent
        if outcome.message is not None:  # an Anthropic-style upstream's own message
            message = {**outcome.message, "id": caller.message_id, "model": answered}
        else:
            message = to_message(chat, message_id=caller.message_id, requested_model=answered)
        response = json_response(message)
    for name, header in FACT_HEADERS.items():
        if name in facts:
            response[header] = str(facts[name])
    return response


def _stream_frames(served: Served, opened: Opened, finish: Finish) -> StreamFrames:
    """The client's event stream (messages_stream.relay_messages), recorded however it
    ends."""
    on_end = stream_recorder(finish)
    frames = relay_messages(
        opened,
        message_id=served.caller.message_id,
        input_tokens=served.resolved.routing.input_tokens,
        on_end=on_end,
    )
    return StreamFrames(frames, opened, on_end)


MESSAGES = Operation(
    "messages",
    parse=parse_messages,
    render=render_messages,
    render_error=render_anthropic_error,
)


def anthropic_model_list(models: list[dict[str, Any]]) -> dict[str, Any]:
    """`GET /v1/models` in Anthropic's shape, for a request carrying `anthropic-version`:
    the same models as the OpenAI-shaped list, one page."""
    data = [
        {
            "type": "model",
            "id": model["id"],
            "display_name": model["id"],
            "created_at": datetime.fromtimestamp(model["created"], UTC)
            .isoformat()
            .replace("+00:00", "Z"),
        }
        for model in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
