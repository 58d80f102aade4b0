"""`POST /v1/chat/completions` (SPEC R-API-1): the body validated as OpenAI's, the answer
the upstream's with the `switchyard` block (R-API-4), or its stream followed by the
switchyard chunk and `[DONE]` (or an error event if the upstream breaks mid-stream)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpResponseBase

from gateway import drain
from gateway.api.wire import StreamFrames, json_response, sse_response
from gateway.request_path.operation import Finish, Operation, Parsed, Served
from gateway.request_path.parse import require_bool, validate_chat
from gateway.request_path.record import switchyard_block
from gateway.upstream.attempt import Opened
from gateway.upstream.relay import CLIENT_DISCONNECTED, relay
from gateway.upstream.streaming import DONE_FRAME, frame_json


def parse_chat(body: dict[str, Any]) -> Parsed:
    validate_chat(body)
    return Parsed(body=body, stream=require_bool(body, "stream"))


def render_chat(served: Served) -> HttpResponseBase:
    outcome, finish = served.outcome, served.finish
    assert outcome is not None
    assert finish is not None
    assert outcome.target is not None
    if outcome.opened is not None:
        return sse_response(chat_stream_frames(served, outcome.opened, finish))
    response = outcome.response or {}
    usage = response.get("usage")
    response["switchyard"] = switchyard_block(served.caller, served.record, outcome.target, usage)
    finish(status=200, target=outcome.target, usage=usage)
    return json_response(response)


def chat_stream_frames(served: Served, opened: Opened, finish: Finish) -> StreamFrames:
    """The client's chat stream: upstream frames, then the switchyard chunk and [DONE]
    (or an error event); the request is recorded however the stream ends."""
    caller, record = served.caller, served.record

    def tail(opened: Opened, error: str | None) -> list[bytes]:
        if error is not None:
            failure = {
                "message": error,
                "type": "upstream_error",
                "code": "stream_interrupted",
                "param": None,
            }
            return [frame_json({"error": failure})]
        block = switchyard_block(caller, record, opened.target, opened.translator.usage)
        translator = opened.translator
        final = {
            # the same id and created as the upstream's chunks before it
            "id": getattr(translator, "chunk_id", None) or caller.completion_ids["completion_id"],
            "object": "chat.completion.chunk",
            "created": getattr(translator, "created", None) or caller.created,
            "model": opened.target.endpoint.model,
            "choices": [],
            "switchyard": block,
        }
        return [frame_json(final), DONE_FRAME]

    on_end = stream_recorder(finish)
    return StreamFrames(relay(opened, tail=tail, on_end=on_end), opened, on_end)


# The stream endings that are not the upstream's fault, and how their traces name them.
STREAM_ERROR_CODES = {CLIENT_DISCONNECTED: "stream_interrupted", drain.CUT_SHORT: "drain_deadline"}


def stream_recorder(finish: Finish) -> Callable[[Opened, str | None], None]:
    """What records a committed stream when it ends, however it ends (`error`: None, or
    why it stopped short), for every API that relays one."""

    def on_end(opened: Opened, error: str | None) -> None:
        finish(
            status=200,
            target=opened.target,
            usage=opened.translator.usage,
            error_code=STREAM_ERROR_CODES.get(error, "stream_interrupted") if error else "",
            ttfb_ms=opened.ttfb_ms,
            stream_broke=error is not None and error not in STREAM_ERROR_CODES,
            streamed_chars=opened.translator.streamed_chars,  # settles a stream without usage
        )

    return on_end


CHAT = Operation("chat.completions", parse=parse_chat, render=render_chat)
