"""The request path, step by step (ARCHITECTURE.md): authenticate, parse, resolve,
decide, execute, record. Views call `serve`; each step lives in its own module."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from gateway import runtime
from gateway.api import affinity, bodies, plan, report
from gateway.api.auto_classifier import classify_auto
from gateway.api.context import CallContext, authenticate, deadline_s, make_targets
from gateway.api.errors import ApiError, render_error
from gateway.api.tiering import apply_tiers
from gateway.attempts import AttemptFailed
from gateway.execute import CLIENT_DISCONNECTED, Opened, Outcome, execute, relay
from gateway.streaming import DONE_FRAME, frame_json
from routing.types import Decision, RoutingRequest

ADAPTIVE_OBSERVER = runtime.AdaptiveObserver()
Handler = Callable[[CallContext, HttpRequest, dict[str, Any]], Awaitable[HttpResponseBase]]


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
        return report.add_headers(await handler(ctx, request, body), ctx)
    except ApiError as error:
        report.finish(ctx, status=error.status, error_code=error.code)
        return report.add_headers(render_error(error), ctx)


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
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], routing: RoutingRequest
) -> Outcome:
    """Decide and call each model of the chain in turn (SPEC R-MOD-6): the next model only
    after this one's endpoints are exhausted with retryable failures or none passed the
    filter; a final failure (a client error) ends the request."""
    gateway = runtime.gateway_settings()
    policy = ctx.workspace.policy
    seed = plan.route_seed(ctx, request)
    rng = random.Random(seed)
    ctx.routing = routing
    session = ctx.session = affinity.session_of(ctx, request, body, routing)
    chain, pin_outcomes = plan.model_chain(
        ctx.snapshot, routing, rng, affinity.target_pins(session, routing, ctx.snapshot.virtual)
    )
    affinity.count_target_pins(pin_outcomes)
    last_error: ApiError | None = None
    for model in chain:
        decision = plan.decide_model(ctx, routing, model, rng)
        decision = affinity.apply_affinity(decision, model, session)
        ctx.decision = decision
        ctx.decisions.append(plan.decision_entry(ctx, decision, routing, model, seed))
        if not decision.ordered:
            last_error = no_endpoint(decision)
            continue
        attempt_list = decision.ordered[: max(1, min(policy.max_attempts, gateway.max_attempts))]
        outcome = await execute(
            runtime.client(),
            make_targets(ctx, attempt_list, gateway),
            body,
            operation=routing.operation,
            stream=ctx.stream,
            ids=ctx.completion_ids,
            deadline_s=deadline_s(ctx, gateway),
            observer=report.AttemptRecorder(ctx, ADAPTIVE_OBSERVER),
        )
        ctx.attempts.extend(outcome.attempts)
        if outcome.failure is None:
            affinity.remember_success(ctx, session, model, outcome.target)  # type: ignore[arg-type]
            return outcome
        last_error = upstream_failure(outcome)
        if not outcome.failure.retryable:
            break
    raise last_error or ApiError(404, "No model to route to.", code="model_not_found")


def json_response(payload: dict[str, Any]) -> HttpResponse:
    return HttpResponse(orjson.dumps(payload), content_type="application/json")


async def chat_completions(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any]
) -> HttpResponseBase:
    bodies.validate_chat(body)
    body, ctx.tier = apply_tiers(ctx, request, body)
    routing = plan.resolve_request(ctx, request, body, "chat")
    ctx.stream = bodies.require_bool(body, "stream")
    routing = await classify_auto(ctx, body, routing)
    outcome = await route_and_execute(ctx, request, body, routing)
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
            stream_broke=error is not None and error != CLIENT_DISCONNECTED,
        )

    return relay(opened, tail=tail, on_end=on_end)


async def embeddings(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any]
) -> HttpResponseBase:
    bodies.validate_embeddings(body)
    routing = plan.resolve_request(ctx, request, body, "embeddings")
    outcome = await route_and_execute(ctx, request, body, routing)
    response = outcome.response or {}
    usage = response.get("usage")
    report.finish(ctx, status=200, target=outcome.target, usage=usage)
    return json_response(response)


async def explain(ctx: CallContext, request: HttpRequest, body: dict[str, Any]) -> HttpResponseBase:
    """`POST /v1/routing/explain` (SPEC R-BEY-2): the decision for this body, no upstream
    call, nothing stored. The same seed gives the same decision as the real request.
    A tiered alias is classified as it would be, but the explanation pins nothing."""
    bodies.validate_chat(body)
    body, tier = apply_tiers(ctx, request, body, dry_run=True)
    routing = await classify_auto(ctx, body, plan.resolve_request(ctx, request, body, "chat"),
                                  dry_run=True)  # fmt: skip
    seed = plan.route_seed(ctx, request)
    rng = random.Random(seed)
    session = affinity.session_of(ctx, request, body, routing)
    decisions = []
    chain, _outcomes = plan.model_chain(
        ctx.snapshot, routing, rng, affinity.target_pins(session, routing, ctx.snapshot.virtual)
    )
    for model in chain:
        decision = plan.decide_model(ctx, routing, model, rng)
        decision = affinity.apply_affinity(decision, model, session, count=False)
        decisions.append(plan.decision_entry(ctx, decision, routing, model, seed))
    attempt_order = [eid for d in decisions for eid in d["ordered"]]
    return json_response({
        "object": "switchyard.routing_explanation",
        "request": plan.request_json(routing),
        "tier": tier.as_json() if tier else None,
        "auto": ctx.auto,
        "decisions": decisions,
        "attempt_order": attempt_order,
        "reason": decisions[0]["reason"] if decisions else "",
    })  # fmt: skip
