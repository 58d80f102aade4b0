"""The request path, step by step (ARCHITECTURE.md): authenticate, parse, resolve,
decide, execute, record. Views call `serve`; each step lives in its own module."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from gateway import runtime
from gateway.api import affinity, bodies, plan, report
from gateway.api.auto_classifier import classify_auto
from gateway.api.context import (
    CallContext,
    authenticate,
    deadline_s,
    make_targets,
    presented_key,
)
from gateway.api.errors import ApiError, render_error
from gateway.api.tiering import apply_tiers
from gateway.execute import CLIENT_DISCONNECTED, Opened, Outcome, abandon, execute, relay
from gateway.snapshot import Snapshot
from gateway.streaming import DONE_FRAME, frame_json
from routing.attempts import final_error
from routing.types import Decision, Reason, RoutingRequest

# Recorded for a request whose client hung up before the answer began (nginx's code).
CLIENT_CLOSED_REQUEST = 499
DEFERRED_RECORD_S = 0.5

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
        key_secret=presented_key(request),
    )
    try:
        body = bodies.read_json(request, gateway.max_body_bytes)
    except ApiError as error:
        return report.add_headers(render_error(error), ctx)
    # A dry run records nothing, not even its own failure (SPEC D-21).
    records = operation != "routing.explain"
    try:
        return report.add_headers(await handler(ctx, request, body), ctx)
    except ApiError as error:
        if records:
            report.finish(ctx, status=error.status, error_code=error.code)
        return report.add_headers(render_error(error), ctx)
    except asyncio.CancelledError:
        # The client hung up before the answer began (the server cancels the view); the
        # executor has closed the upstream call. The trace says so, then the cancel goes on.
        if records:
            # Recorded a moment later: when thousands of clients hang up at once, every
            # upstream connection is closed first, the bookkeeping follows (bench/flood.py).
            asyncio.get_running_loop().call_later(
                DEFERRED_RECORD_S, lambda: report.finish(
                    ctx, status=CLIENT_CLOSED_REQUEST, error_code="client_disconnected")
            )  # fmt: skip
        raise


def no_endpoint(decision: Decision, request: RoutingRequest, snap: Snapshot) -> ApiError:
    """SPEC R-DEC-3 / R-BEY-6: the engine's sentence, then the fixed promise, and the
    machine-readable list of excluded candidates — unless the only thing wrong is size
    (SPEC D-16): then OpenAI's 400 `context_length_exceeded`, which clients handle."""
    if decision.rejected and all(r is Reason.CONTEXT_TOO_SMALL for _e, r in decision.rejected):
        rejected = {eid for eid, _r in decision.rejected}
        windows = [e.context_window for e in snap.all_endpoints if e.id in rejected]
        largest = max(windows, default=0)
        return ApiError(
            400,
            f"This request needs about {request.input_tokens} input tokens plus "
            f"{request.output_tokens or 0} output tokens, more than the largest context "
            f"window on offer for it ({largest} tokens). Shorten the messages or the "
            "requested output.",
            code="context_length_exceeded",
            param="messages",
        )
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
    """The client's error after the model's last attempt failed (SPEC D-18). Only the
    upstream's own message, scrubbed of credentials (D-17), is quoted for a request the
    upstream rejected; the attempts list carries the gateway's words only."""
    failures = outcome.failures or ([outcome.failure] if outcome.failure else [])
    attempts = {"attempts": [a.as_dict() for a in outcome.attempts]}
    if not failures:
        return ApiError(503, "No upstream attempt was made.", code="upstream_unavailable",
                        headers={"Retry-After": "1"}, extra=attempts)  # fmt: skip
    final = final_error(failures)
    last = failures[-1]
    if final.code == "upstream_rejected_request":
        said = f": {last.upstream_message}" if last.upstream_message else "."
        message = f"The upstream rejected the request (HTTP {final.status}){said}"
    elif final.code == "unsupported_request":
        message = last.message  # no endpoint's API can express it (e.g. `n` > 1)
    else:
        message = f"All {len(outcome.attempts)} upstream attempts failed; last: {last.message}"
    headers = {"Retry-After": str(final.retry_after_s)} if final.retry_after_s else {}
    return ApiError(final.status, message, code=final.code, headers=headers, extra=attempts)


async def route_and_execute(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], routing: RoutingRequest
) -> Outcome:
    """Decide and call each model of the chain in turn (SPEC R-MOD-6): the next model only
    after this one's endpoints are exhausted with retryable failures or none passed the
    filter; a final failure (a client error) ends the request."""
    gateway = runtime.gateway_settings()
    policy = ctx.workspace.policy
    # One total deadline for the whole request, every model of the chain and a committed
    # stream's relay included (SPEC R-EXE-8, D-20).
    deadline_at = asyncio.get_running_loop().time() + deadline_s(ctx, gateway) - ctx.elapsed_s()
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
            last_error = no_endpoint(decision, routing, ctx.snapshot)
            continue
        attempt_list = decision.ordered[: max(1, min(policy.max_attempts, gateway.max_attempts))]
        outcome = await execute(
            runtime.client(),
            make_targets(ctx, attempt_list, gateway),
            body,
            operation=routing.operation,
            stream=ctx.stream,
            ids=ctx.completion_ids,
            deadline_at=deadline_at,
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


class StreamFrames:
    """A committed stream's frames, and what to do if the server never iterates them (the
    client left first): `gateway/asgi.py` calls `abandon` after every streamed response."""

    def __init__(self, frames: AsyncIterator[bytes], opened: Opened, on_end: Any) -> None:
        self.frames, self.opened, self.on_end = frames, opened, on_end

    async def abandon(self) -> None:
        await abandon(self.opened, self.on_end)


def sse_response(stream: StreamFrames) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream.frames, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    response.switchyard_abandon = stream.abandon  # type: ignore[attr-defined]
    return response


def chat_stream_frames(ctx: CallContext, opened: Opened) -> StreamFrames:
    """The client's chat stream: upstream frames, then the switchyard chunk and [DONE]
    (or an error event); the trace is recorded however the stream ends."""

    def tail(opened: Opened, error: str | None) -> list[bytes]:
        if error is not None:
            failure = {"message": error, "type": "upstream_error",
                       "code": "stream_interrupted", "param": None}  # fmt: skip
            return [frame_json({"error": failure})]
        block = report.switchyard_block(ctx, opened.target, opened.translator.usage)
        translator = opened.translator
        final = {
            # the same id and created as the upstream's chunks before it
            "id": getattr(translator, "chunk_id", None) or ctx.completion_ids["completion_id"],
            "object": "chat.completion.chunk",
            "created": getattr(translator, "created", None) or ctx.created,
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

    return StreamFrames(relay(opened, tail=tail, on_end=on_end), opened, on_end)


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
    """`POST /v1/routing/explain` (SPEC R-BEY-2, D-21): the decision for this body, no
    upstream call, and no state changed — no round-robin turn, pin or counter — so the next
    real request is routed as if it never ran. The same seed gives the same decision as
    that request. Every step that could change state runs as a `dry_run`."""
    bodies.validate_chat(body)
    body, tier = apply_tiers(ctx, request, body, dry_run=True)
    routing = await classify_auto(ctx, body, plan.resolve_request(ctx, request, body, "chat"),
                                  dry_run=True)  # fmt: skip
    seed = plan.route_seed(ctx, request)
    rng = random.Random(seed)
    session = affinity.session_of(ctx, request, body, routing)
    decisions = []
    pins = affinity.target_pins(session, routing, ctx.snapshot.virtual)
    chain, _outcomes = plan.model_chain(ctx.snapshot, routing, rng, pins, dry_run=True)
    for model in chain:
        decision = plan.decide_model(ctx, routing, model, rng)
        decision = affinity.apply_affinity(decision, model, session, dry_run=True)
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
