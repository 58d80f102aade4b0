"""`POST /v1/messages` (SPEC R-API-9; its `count_tokens` is messages_count.py): Anthropic's
Messages API on the chat path. The request is translated into a chat body
(gateway/api/messages_request.py) and goes through the same seven steps as a chat
completion — policy, residency, fallbacks, tiers, auto router, traces — then the answer is
shaped back into Anthropic's `message` (messages_response.py) or its event stream
(messages_stream.py). Errors are Anthropic's envelope with the same statuses, and the
`switchyard` facts, which have no place in Anthropic's body, go in `X-Switchyard-*` headers.

Not yet: an Anthropic-style upstream is reached through the chat translation too, so
fields only Anthropic reads (`thinking` blocks in earlier turns, `cache_control`, `top_k`)
are dropped on the way (`without_anthropic_extras`), for every upstream alike.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpResponse, HttpResponseBase

from gateway.api.chat import chat_stream_frames
from gateway.api.messages_request import (
    MessagesRequestError,
    to_chat_body,
    without_anthropic_extras,
)
from gateway.api.messages_response import error_body, to_message
from gateway.api.messages_stream import MessagesStream, translate
from gateway.api.wire import json_response, sse_response
from gateway.errors import FINAL_STATUSES, ApiError, invalid
from gateway.request_path.operation import Operation, Parsed, Served
from gateway.request_path.parse import validate_chat
from gateway.request_path.record import switchyard_block

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
    return Parsed(body=chat, stream=chat.get("stream") is True, echo=translated.echo)


def render_messages(served: Served) -> HttpResponseBase:
    caller, outcome, finish = served.caller, served.outcome, served.finish
    assert outcome is not None
    assert finish is not None
    assert outcome.target is not None
    message_id = f"msg_{caller.trace_id.hex}"
    if outcome.opened is not None:
        opened = outcome.opened
        shaper = MessagesStream(
            message_id=message_id,
            model=opened.target.endpoint.model,
            input_tokens=served.resolved.routing.input_tokens,
        )
        stream = chat_stream_frames(served, opened, finish)
        stream.frames = translate(stream.frames, shaper)
        response: HttpResponseBase = sse_response(stream)
        facts = switchyard_block(caller, served.record, opened.target, None)
        facts.pop("cost_estimate_usd")  # not known before the stream ends
    else:
        chat = outcome.response or {}
        usage = chat.get("usage")
        facts = switchyard_block(caller, served.record, outcome.target, usage)
        finish(status=200, target=outcome.target, usage=usage)
        requested = served.parsed.echo.get("model", "")
        response = json_response(to_message(chat, message_id=message_id, requested_model=requested))
    for name, header in FACT_HEADERS.items():
        if name in facts:
            response[header] = str(facts[name])
    return response


def render_anthropic_error(error: ApiError) -> HttpResponse:
    """The error in Anthropic's envelope (`{"type": "error", "error": {type, message}}`),
    with the status, `Retry-After` and `x-should-retry` of the OpenAI-shaped one."""
    response = HttpResponse(
        orjson.dumps(error_body(error.status, error.message)),
        status=error.status,
        content_type="application/json",
    )
    if error.status in FINAL_STATUSES:
        response["x-should-retry"] = "false"
    for name, value in error.headers.items():
        response[name] = value
    return response


MESSAGES = Operation(
    "messages", parse=parse_messages, render=render_messages,
    render_error=render_anthropic_error,
)  # fmt: skip


def anthropic_model_list(models: list[dict[str, Any]]) -> dict[str, Any]:
    """`GET /v1/models` in Anthropic's shape, for a request carrying `anthropic-version`:
    the same models as the OpenAI-shaped list, one page."""
    data = [
        {
            "type": "model",
            "id": model["id"],
            "display_name": model["id"],
            "created_at": datetime.fromtimestamp(model["created"], UTC).isoformat()
            .replace("+00:00", "Z"),
        }
        for model in models
    ]  # fmt: skip
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
