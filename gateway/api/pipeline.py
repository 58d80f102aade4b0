"""The request path, step by step (ARCHITECTURE.md): authenticate, parse, resolve,
decide, execute, record. Views call `serve`; each step lives in its own module."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from gateway import runtime
from gateway.api import bodies, report
from gateway.api.context import CallContext, authenticate, deadline_s, make_targets
from gateway.api.errors import ApiError, render_error
from gateway.attempts import AttemptFailed
from gateway.execute import Opened, Outcome, execute, relay
from gateway.streaming import DONE_FRAME, frame_json
from routing.decide import decide
from routing.names import resolve_model_name
from routing.types import Decision, RouteRequest

Handler = Callable[[CallContext, dict[str, Any]], Awaitable[HttpResponseBase]]
CHARS_PER_TOKEN = 4  # rough estimate used for the context-window filter, no tokenizer


async def serve(request: HttpRequest, operation: str, handler: Handler) -> HttpResponseBase:
    gateway = runtime.gateway_settings()
    snap = await runtime.snapshots().current()
    try:
        key, workspace = authenticate(request, snap)
    except ApiError as error:
        return render_error(error)
    ctx = CallContext(
        request_id=request.request_id,  # type: ignore[attr-defined]
        snapshot=snap,
        key=key,
        workspace=workspace,
        operation=operation,
    )
    try:
        body = bodies.read_json(request, gateway.max_body_bytes)
    except ApiError as error:
        return report.add_headers(render_error(error), ctx)
    try:
        return report.add_headers(await handler(ctx, body), ctx)
    except ApiError as error:
        report.finish(ctx, status=error.status, error_code=error.code)
        return report.add_headers(render_error(error), ctx)


def resolve_model(ctx: CallContext, body: dict[str, Any]) -> str:
    ctx.requested_model = bodies.require_model(body)
    slug = resolve_model_name(ctx.snapshot.names, ctx.requested_model)
    if slug is None:
        raise ApiError(
            404,
            f"The model `{ctx.requested_model}` does not exist.",
            code="model_not_found",
            param="model",
        )
    return slug


def no_endpoint(decision: Decision) -> ApiError:
    """SPEC R-DEC-3 / R-BEY-6: the engine's sentence, then the fixed promise, and the
    machine-readable list of excluded candidates."""
    return ApiError(
        409,
        f"{decision.reason} Residency is never relaxed silently.",
        code="no_endpoint_for_policy",
        extra={
            "excluded": [
                {"endpoint": eid, "reason": str(reason)} for eid, reason in decision.rejected
            ]
        },
    )


def upstream_failure(outcome: Outcome) -> ApiError:
    failure = outcome.failure or AttemptFailed("connect_error", "no upstream attempt")
    attempts = {"attempts": [a.as_dict() for a in outcome.attempts]}
    if not failure.retryable and failure.http_status and failure.http_status < 500:
        status = 413 if failure.http_status == 413 else 400
        return ApiError(
            status,
            f"The upstream rejected the request: {failure.message}",
            code="upstream_rejected_request",
            extra=attempts,
        )
    if outcome.failures and all(f.kind == "unsupported_request" for f in outcome.failures):
        # No endpoint's API can express this request (e.g. `n` > 1 on Anthropic only).
        return ApiError(400, failure.message, code="unsupported_request", extra=attempts)
    if failure.kind == "timeout":
        status, code = 504, "upstream_timeout"
    elif failure.http_status in (None, 429, 503, 529):
        status, code = 503, "upstream_unavailable"
    else:
        status, code = 502, "upstream_error"
    headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
    return ApiError(
        status,
        f"All {len(outcome.attempts)} upstream attempts failed; last: {failure.message}",
        code=code,
        headers=headers,
        extra=attempts,
    )


async def route_and_execute(
    ctx: CallContext, body: dict[str, Any], route: RouteRequest, *, stream: bool
) -> Outcome:
    gateway = runtime.gateway_settings()
    policy = ctx.workspace.policy
    ctx.decision = decide(ctx.snapshot.endpoints.get(route.model, ()), route, policy)
    if not ctx.decision.ordered:
        raise no_endpoint(ctx.decision)
    attempt_list = ctx.decision.ordered[: max(1, min(policy.max_attempts, gateway.max_attempts))]
    outcome = await execute(
        runtime.client(),
        make_targets(ctx, attempt_list, gateway),
        body,
        operation=route.operation if route.operation == "embeddings" else "chat",
        stream=stream,
        ids=ctx.completion_ids,
        deadline_s=deadline_s(ctx, gateway),
    )
    ctx.attempts = outcome.attempts
    if outcome.failure is not None:
        raise upstream_failure(outcome)
    return outcome


def chat_route(ctx: CallContext, body: dict[str, Any]) -> RouteRequest:
    bodies.validate_chat(body)
    slug = resolve_model(ctx, body)
    messages = body["messages"]
    return RouteRequest(
        model=slug,
        operation="chat",
        has_image=bodies.has_image(messages),
        input_tokens=bodies.message_text_chars(messages) // CHARS_PER_TOKEN,
        output_tokens=bodies.requested_output_tokens(body),
    )


def json_response(payload: dict[str, Any]) -> HttpResponse:
    return HttpResponse(orjson.dumps(payload), content_type="application/json")


async def chat_completions(ctx: CallContext, body: dict[str, Any]) -> HttpResponseBase:
    route = chat_route(ctx, body)
    ctx.stream = bodies.require_bool(body, "stream")
    outcome = await route_and_execute(ctx, body, route, stream=ctx.stream)
    if outcome.opened is not None:
        return stream_response(ctx, outcome.opened)
    response = outcome.response or {}
    usage = response.get("usage")
    response["switchyard"] = report.switchyard_block(ctx, outcome.target, usage)  # type: ignore[arg-type]
    report.finish(ctx, status=200, target=outcome.target, usage=usage)
    return json_response(response)


def stream_response(ctx: CallContext, opened: Opened) -> StreamingHttpResponse:
    return sse_response(chat_stream_frames(ctx, opened))


def sse_response(frames: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(frames, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def chat_stream_frames(ctx: CallContext, opened: Opened) -> AsyncIterator[bytes]:
    """The client's chat stream: upstream frames, then the switchyard chunk and [DONE]
    (or an error event); the trace is recorded however the stream ends."""

    def tail(opened: Opened, error: str | None) -> list[bytes]:
        if error is not None:
            failure = {"message": error, "type": "upstream_error",
                       "code": "stream_interrupted", "param": None}  # fmt: skip
            return [frame_json({"error": failure})]
        block = report.switchyard_block(ctx, opened.target, opened.translator.usage)
        final = {
            "id": ctx.completion_ids["completion_id"],
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": opened.target.endpoint.model,
            "choices": [],
            "switchyard": block,
        }
        return [frame_json(final), DONE_FRAME]

    def on_end(opened: Opened, error: str | None) -> None:
        report.finish(
            ctx,
            status=200,
            target=opened.target,
            usage=opened.translator.usage,
            error_code="stream_interrupted" if error else "",
            ttfb_ms=opened.ttfb_ms,
        )

    return relay(opened, tail=tail, on_end=on_end)


async def embeddings(ctx: CallContext, body: dict[str, Any]) -> HttpResponseBase:
    bodies.validate_embeddings(body)
    slug = resolve_model(ctx, body)
    route = RouteRequest(model=slug, operation="embeddings")
    outcome = await route_and_execute(ctx, body, route, stream=False)
    response = outcome.response or {}
    usage = response.get("usage")
    report.finish(ctx, status=200, target=outcome.target, usage=usage)
    return json_response(response)
