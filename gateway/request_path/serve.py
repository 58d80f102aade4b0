"""The request path, top to bottom, for every operation: `serve` strings the seven steps
of ARCHITECTURE.md (the package docstring lists their modules). It reads the wall clock
once, reads the process's state once (`request_state.read`), and is the one place that
applies what the steps return as effects — which a dry run (explain) never does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from django.http import HttpRequest, HttpResponseBase

from gateway import drain
from gateway.errors import ApiError
from gateway.request_path import parse
from gateway.request_path.admit import Admission, admit, tokens_used, with_route_usage
from gateway.request_path.authenticate import authenticate, snapshot_knowing_key
from gateway.request_path.caller import Caller
from gateway.request_path.decide import Plan
from gateway.request_path.execute import deadline_s, execute_plan
from gateway.request_path.operation import Finish, Operation, Parsed, Served
from gateway.request_path.record import RequestRecord, add_headers, cost_micros, finish
from gateway.request_path.resolve import Resolved, resolve_request, route_seed
from gateway.request_path.resolve.affinity import session_of
from gateway.request_path.resolve.auto import ChildRequest
from gateway.request_path.resolve.routes import RouteRejected
from gateway.state import admission_state, request_state
from gateway.state.request_state import Effects, apply
from gateway.upstream.providers.anthropic_native import NativeRequest, native_request
from routing.engine.affinity.sessions import client_session
from routing.engine.types import EndpointInfo, RoutingRequest

# Recorded for a request whose client hung up before the answer began (nginx's code).
CLIENT_CLOSED_REQUEST = 499
DEFERRED_RECORD_S = 0.5
MAX_VERSION_CHARS = 32  # of the `anthropic-version` header kept in the trace


async def serve(request: HttpRequest, operation: Operation) -> HttpResponseBase:
    now = time.time()  # the request's one reading of the wall clock
    snap = await snapshot_knowing_key(request)
    try:
        caller = authenticate(request, snap, now)  # 1
    except ApiError as error:
        return operation.render_error(error)
    try:
        body = parse.read_json(request, request_state.gateway_settings().max_body_bytes)
    except ApiError as error:  # not even a body: nothing to trace
        return add_headers(operation.render_error(error), caller.trace_id, None)
    # Any date is accepted; a client header, so bounded before it is stored.
    version = request.headers.get("anthropic-version", "")[:MAX_VERSION_CHARS]
    record = RequestRecord(operation=operation.name, anthropic_version=version)
    try:
        response = await _steps(request, operation, caller, record, body)
    except ApiError as error:
        if isinstance(error, RouteRejected):  # the trace keeps the walk that refused it
            record.route, record.route_inputs = error.route, error.inputs
        if not operation.dry_run:  # a dry run records nothing, not even its failure (D-21)
            apply(finish(caller, record, status=error.status, error_code=error.code))
        return add_headers(operation.render_error(error), caller.trace_id, record)
    except asyncio.CancelledError:
        # The client hung up before the answer began (the server cancels the view), or the
        # drain's deadline passed (gateway/drain.py); the executor has closed the upstream
        # call. The trace says so, then the cancel goes on.
        if not operation.dry_run:
            # Recorded a moment later: when thousands of clients hang up at once, every
            # upstream connection is closed first, the bookkeeping follows (bench/flood.py).
            asyncio.get_running_loop().call_later(
                DEFERRED_RECORD_S,
                lambda: apply(
                    finish(
                        caller,
                        record,
                        status=CLIENT_CLOSED_REQUEST,
                        error_code="drain_deadline" if drain.current.cut else "client_disconnected",
                    )
                ),
            )
        raise
    return add_headers(response, caller.trace_id, record)


async def serve_as(
    request: HttpRequest,
    operation: Operation,
    workspace_id: int,
    lookup_id: str,
    body: dict[str, Any],
) -> HttpResponseBase:
    """A dry run (explain) for the key `lookup_id` of workspace `workspace_id`, without its
    secret: the console's explain playground, whose caller is a signed-in member the
    console has already allowed (console/explain_views.py). Only a dry run may be served
    so — it calls no upstream and records and changes nothing (D-21)."""
    if not operation.dry_run:
        raise ValueError(f"{operation.name} is not a dry run: it needs the key itself")
    now = time.time()
    snap = await request_state.snapshot_knowing(lookup_id)
    key, workspace = snap.keys.get(lookup_id), snap.workspaces.get(workspace_id)
    expired = key is not None and key.expires_at is not None and key.expires_at <= now
    if key is None or workspace is None or key.workspace_id != workspace_id or expired:
        return operation.render_error(
            ApiError(404, "No such active key in this workspace.", code="key_not_found")
        )
    caller = Caller(
        request_id=request.request_id,  # (set by the request-id middleware)
        snapshot=snap,
        key=key,
        workspace=workspace,
        started_at=now,
    )
    try:
        return await _steps(request, operation, caller, RequestRecord(operation.name), body)
    except ApiError as error:
        return operation.render_error(error)


async def _steps(
    request: HttpRequest,
    operation: Operation,
    caller: Caller,
    record: RequestRecord,
    body: dict[str, Any],
) -> HttpResponseBase:
    parsed = operation.parse(body)  # 2
    record.stream = parsed.stream
    sent_session = client_session(request.headers, body)
    record.session_id = sent_session[1] if sent_session else ""
    effects = Effects()
    ask = None if operation.dry_run else child_request
    resolved, plan = await _decided(request, operation, caller, parsed, effects, ask)  # 3, 4
    record.requested_model = resolved.routing.requested_model
    record.routing, record.tier, record.auto = resolved.routing, resolved.tier, resolved.auto
    record.session, record.route = resolved.session, resolved.route
    record.route_inputs = resolved.route_inputs
    if operation.dry_run:
        return operation.render(Served(caller, record, parsed, resolved, plan, None, None))
    apply(effects)
    apply(plan.effects)
    gateway = request_state.gateway_settings()
    admission = await admit(  # 5
        caller,
        resolved,
        plan.models,
        admission_state.stores(),
        deadline_s=deadline_s(caller, gateway),
        meanwhile=plan.decide_first,  # (step 6's first decision, made while Redis answers)
    )
    record.admission_headers = admission.headers
    try:
        outcome = await execute_plan(  # 6
            caller,
            record,
            plan,
            resolved.body,
            stream=parsed.stream,
            apply=apply,
            native=None
            if parsed.native is None
            else native_for(caller, parsed.native, request.headers),
        )
    except ApiError:
        admission.settle(0, 0, caller.now())  # every attempt failed: nothing was answered
        raise
    except asyncio.CancelledError:
        # The client hung up during an attempt: the upstream may have read the input.
        admission.settle(admission.cost_of(0, _tried(record), 0), 0, caller.now())
        raise
    done = _recorder(caller, record, admission)  # 7, when the answer is complete
    return operation.render(Served(caller, record, parsed, resolved, plan, outcome, done))


def native_for(caller: Caller, body: dict[str, Any], headers: Mapping[str, str]) -> NativeRequest:
    """A Messages request as Anthropic-style upstreams get it, with the key's preset
    defaults where it is silent (as resolve fills them into the chat body, R-PRE-1)."""
    preset = caller.key.preset
    return native_request(
        body,
        headers,
        message_id=caller.message_id,
        default_prompt=preset.default_prompt if preset else "",
        default_params=preset.default_params if preset else None,
    )


def _recorder(caller: Caller, record: RequestRecord, admission: Admission) -> Finish:
    def done(**outcome: Any) -> None:
        # Recorded on the event loop's next turn, by when the answer has been handed to the
        # server: the client does not wait for the bookkeeping (docs/performance.md, "The
        # record after the answer"). The loop runs callbacks in order, so a request that
        # arrives after the answer left is served after this record; its time is taken now.
        elapsed_s = caller.elapsed_s()
        asyncio.get_running_loop().call_soon(record_now, elapsed_s, outcome)

    def record_now(elapsed_s: float, outcome: dict[str, Any]) -> None:
        streamed_chars = outcome.pop("streamed_chars", 0)
        usage, target = outcome.get("usage"), outcome.get("target")
        cost = admission.cost_of(
            cost_micros(usage, target), target.endpoint if target else None, streamed_chars
        )
        admission.settle(cost, tokens_used(usage, admission), caller.started_at + elapsed_s)
        apply(finish(caller, record, elapsed_s=elapsed_s, **outcome))

    return cast(Finish, done)


def _tried(record: RequestRecord) -> EndpointInfo | None:
    """The endpoint of the last attempt made, if any."""
    decision = record.decision
    if not record.attempts or decision is None:
        return None
    tried = record.attempts[-1].endpoint
    return next((e for e in decision.ordered if e.id == tried), None)


async def child_request(
    child: Caller,
    body: dict[str, Any],
    routing: Callable[[], RoutingRequest],
    timeout_s: float,
    judge: Callable[[dict[str, Any]], str],
) -> str:
    """A request the gateway makes itself (the auto router's classifier call) through the
    same decide → execute → record steps, with its own trace and none of the client's
    headers; returns its error code ("" when `judge` accepts the answer)."""
    record = RequestRecord(operation="chat.completions")
    status, target, usage, error_code = 200, None, None, ""
    try:
        record.routing = child_routing = routing()
        state = request_state.read(child.now(), child)
        session = session_of(child, {}, body, child_routing, state)
        record.session = session
        resolved = Resolved(body, child_routing, route_seed(child, {}), session=session)
        plan = Plan(child, resolved, state)
        apply(plan.effects)
        outcome = await asyncio.wait_for(
            execute_plan(child, record, plan, body, stream=False, apply=apply), timeout=timeout_s
        )
        target, response = outcome.target, outcome.response or {}
        usage = response.get("usage")
        error_code = judge(response)
    except TimeoutError:
        status, error_code = 504, "classifier_timeout"
    except ApiError as error:
        status, error_code = error.status, error.code
    apply(finish(child, record, status=status, target=target, usage=usage, error_code=error_code))
    return error_code


async def decide_only(
    request: HttpRequest, operation: Operation, caller: Caller, body: dict[str, Any]
) -> Served:
    """Steps 2–4 of `operation` for `body` and no further: what a request of it would be
    routed to, its refusals (raised as ApiError) included, as a dry run — nothing recorded,
    no effect applied, no budget admitted, no model called (the auto router's classifier
    neither, as in explain). A route's `endpoint` condition sees `operation.route_name`.
    For `POST /v1/messages/count_tokens` (gateway/api/anthropic/count_tokens.py), whose answer is
    not a rendered outcome; the `Served` has no outcome and no finish."""
    parsed = operation.parse(body)
    resolved, plan = await _decided(request, operation, caller, parsed, Effects(), None)
    return Served(caller, RequestRecord(operation.name), parsed, resolved, plan, None, None)


async def _decided(
    request: HttpRequest,
    operation: Operation,
    caller: Caller,
    parsed: Parsed,
    effects: Effects,
    ask: ChildRequest | None,
) -> tuple[Resolved, Plan]:
    """Steps 3 and 4: the request resolved and planned against the process's state, read
    once here. `effects` collects what resolving would change (applied by the caller, or
    never); `ask` serves the auto router's classifier (None: no model is called)."""
    state = request_state.read(caller.started_at, caller)
    state = await with_route_usage(state, caller, admission_state.stores())
    resolved = await resolve_request(
        caller,
        parsed.body,
        request.headers,
        state,
        effects,
        operation=operation.routes_as,
        route_operation=operation.route_name,
        smart=operation.smart,
        ask=ask,
    )
    return resolved, Plan(caller, resolved, state)
