"""`POST /v1/responses`: the Responses API's `input` form mapped onto the chat path
(SPEC R-API-1). The request becomes a chat completion; the answer is shaped back into a
`response` object. Routing, failover and the trace are the chat path's own."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponseBase

from gateway.api import bodies, pipeline, plan, report
from gateway.api.auto_classifier import classify_auto
from gateway.api.context import CallContext
from gateway.api.errors import invalid
from gateway.api.responses_stream import ResponsesStream, translate
from gateway.api.tiering import apply_tiers
from gateway.streaming import frame_json

PASSED_THROUGH = ("temperature", "stream", "top_p", "user", "metadata", "tools", "tool_choice",
                  "parallel_tool_calls", "models", "provider", "routing", "residency",
                  "session_id")  # fmt: skip
CONTENT_TYPES = {"input_text": "text", "output_text": "text", "text": "text"}


def _content(content: Any, param: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid("content must be a string or an array of parts", param=param)
    parts: list[dict[str, Any]] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in CONTENT_TYPES:
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": part.get("image_url", "")}})
        else:
            raise invalid(f"unsupported content part type {kind!r}", param=f"{param}[{index}]")
    return parts


def to_chat_body(body: dict[str, Any]) -> dict[str, Any]:
    raw_input = body.get("input")
    messages: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        messages.append({"role": "system", "content": body["instructions"]})
    if isinstance(raw_input, str):
        messages.append({"role": "user", "content": raw_input})
    elif isinstance(raw_input, list) and raw_input:
        for index, item in enumerate(raw_input):
            if not isinstance(item, dict) or item.get("role") not in bodies.CHAT_ROLES:
                raise invalid("each input item needs a role", param=f"input[{index}]")
            messages.append(
                {"role": item["role"], "content": _content(item.get("content"), f"input[{index}]")}
            )
    else:
        raise invalid("`input` is required: a string or a non-empty array", param="input")
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    for name in PASSED_THROUGH:
        if name in body:
            chat[name] = body[name]
    return chat


def to_response(chat: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append({
            "type": "message",
            "id": f"msg_{ctx.trace_id.hex}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": message["content"], "annotations": []}],
        })  # fmt: skip
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        output.append({
            "type": "function_call",
            "id": f"fc_{call.get('id', '')}",
            "call_id": call.get("id", ""),
            "name": function.get("name", ""),
            "arguments": function.get("arguments", ""),
            "status": "completed",
        })  # fmt: skip
    usage = chat.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return {
        "id": f"resp_{ctx.trace_id.hex}",
        "object": "response",
        "created_at": ctx.created,
        "status": "incomplete" if choice.get("finish_reason") == "length" else "completed",
        "model": chat.get("model"),
        "output": output,
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "input_tokens_details": {"cached_tokens": cached or 0},
            "output_tokens": usage.get("completion_tokens", 0),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.get("total_tokens", 0),
        },
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "switchyard": chat.get("switchyard"),
    }


def _error_event(data: bytes) -> bytes:
    error = orjson.loads(data).get("error") or {}
    return frame_json(
        {"type": "error", "code": error.get("code"), "message": error.get("message", ""),
         "param": None, "sequence_number": 0},
        event="error",
    )  # fmt: skip


async def responses(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any]
) -> HttpResponseBase:
    ctx.stream = bodies.require_bool(body, "stream")
    chat_body = to_chat_body(body)
    bodies.validate_chat(chat_body)
    chat_body, ctx.tier = apply_tiers(ctx, request, chat_body)
    routing = plan.resolve_request(ctx, request, chat_body, "chat")
    routing = await classify_auto(ctx, chat_body, routing)
    outcome = await pipeline.route_and_execute(ctx, request, chat_body, routing)
    if outcome.opened is not None:
        shaper = ResponsesStream(
            response_id=f"resp_{ctx.trace_id.hex}",
            message_id=f"msg_{ctx.trace_id.hex}",
            created=ctx.created,
            model=outcome.opened.target.endpoint.model,
        )
        stream = pipeline.chat_stream_frames(ctx, outcome.opened)
        stream.frames = translate(stream.frames, shaper, _error_event)
        return pipeline.sse_response(stream)
    chat = outcome.response or {}
    usage = chat.get("usage")
    chat["switchyard"] = report.switchyard_block(ctx, outcome.target, usage)  # type: ignore[arg-type]
    report.finish(ctx, status=200, target=outcome.target, usage=usage)
    return pipeline.json_response(to_response(chat, ctx))
