"""Step 7 of the request path: what a finished request tells — the `switchyard` block and
headers for the client (SPEC R-API-4, R-API-5), the trace for the audit log, the live
observations the router reads (and, for attempts with a workspace's own key, that
credential's) and the Prometheus counters. All are built from the same `RequestRecord`,
so they cannot disagree; `finish` returns them as effects for the request path to apply
(never blocking: the trace writer queues)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpResponseBase

from gateway import metrics
from gateway.request_path.caller import Caller
from gateway.request_path.decision_record import trace_decision
from gateway.request_path.resolve.affinity import Session, note_cache_read
from gateway.request_path.resolve.routes import RouteChoice
from gateway.request_path.resolve.tiers import TierOutcome
from gateway.state.request_state import CLIENT_FAULTS, Effects
from gateway.upstream.target import Target
from routing.engine.attempts import Attempt
from routing.engine.decide import reason_for
from routing.engine.live import Observation, credential_series, failure_kind
from routing.engine.types import Decision, RoutingRequest


@dataclass(slots=True)
class RequestRecord:
    """What is learnt about one request as it moves along the path; owned by this step.
    The request path writes each step's result into it, once."""

    operation: str  # chat.completions | responses | embeddings | routing.explain
    requested_model: str = ""
    stream: bool = False
    routing: RoutingRequest | None = None
    tier: TierOutcome | None = None
    auto: dict[str, Any] | None = None
    session: Session | None = None
    decision: Decision | None = None  # the decision of the model being tried
    decisions: list[dict[str, Any]] = field(default_factory=list)  # each model's, recorded
    attempts: list[Attempt] = field(default_factory=list)
    anthropic_version: str = ""  # what a Messages client sent, kept as sent (R-API-9)
    route: RouteChoice | None = None  # the dynamic route that handled it (R-ROUTE-1, D-23)
    route_inputs: dict[str, Any] | None = None  # a routed key's decision inputs (R-BEY-3)
    admission_headers: dict[str, str] = field(default_factory=dict)  # budget, rate limits
    session_id: str = ""  # the session id the client sent, for the request log's filter


def cost_micros(usage: dict[str, Any] | None, target: Target | None) -> int:
    """USD × 1e6. Price is USD per 1M tokens, so tokens × price is micro-dollars."""
    if not usage or target is None:
        return 0
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    ep = target.endpoint
    return round(prompt * ep.price_input + completion * ep.price_output)


def decision_record(record: RequestRecord) -> dict[str, Any]:
    """The trace's `decision` (gateway/request_path/decision_record.py)."""
    tier = record.tier.as_json() if record.tier is not None else None
    decision = trace_decision(record.routing, record.decisions, tier, record.auto)
    if record.anthropic_version and decision:
        decision["anthropic_version"] = record.anthropic_version
    if record.route is not None:
        decision["route"] = record.route.as_json()
    if record.route_inputs is not None:
        decision["route_inputs"] = record.route_inputs
    return decision


def switchyard_block(
    caller: Caller, record: RequestRecord, target: Target, usage: dict[str, Any] | None
) -> dict[str, Any]:
    ep = target.endpoint
    model = caller.snapshot.models.get(ep.model)
    decision = record.decision
    return {
        "trace_id": str(caller.trace_id),
        "request_id": caller.request_id,
        "model": ep.model,
        "model_version": model.version if model else "",
        "provider": ep.provider,
        "endpoint": ep.id,
        "region": ep.region,
        "sovereignty_class": ep.sovereignty_class,
        "policy_id": caller.workspace.policy_id,
        "retention": caller.workspace.retention,
        "cost_estimate_usd": cost_micros(usage, target) / 1_000_000,
        # told for the endpoint that served, which a pin or a failover may have moved
        "routing_reason": reason_for(decision, ep) if decision else "",
        "algorithm": decision.algorithm if decision else "",
        "attempts": len(record.attempts),
        **_route_fields(record.route),
    }


def _route_columns(route: RouteChoice | None) -> dict[str, Any]:
    if route is None:
        return {}
    return {
        "route": route.slug,
        "route_version": route.version,
        "route_node": route.outcome.visited[-1].node,
    }


def _route_fields(route: RouteChoice | None) -> dict[str, Any]:
    """D-23: a route's choice is never silent; the block names it and the nodes walked."""
    if route is None:
        return {}
    return {
        "route": route.slug,
        "route_version": route.version,
        "route_nodes": [step.node for step in route.outcome.visited],
    }


def add_headers(
    response: HttpResponseBase, trace_id: uuid.UUID, record: RequestRecord | None
) -> HttpResponseBase:
    response["X-Switchyard-Trace-Id"] = str(trace_id)
    attempts = record.attempts if record is not None else []
    if record is not None and record.tier is not None:
        for name, value in record.tier.headers().items():
            response[name] = value
    response["X-Switchyard-Attempts"] = orjson.dumps([a.as_dict() for a in attempts]).decode()
    if record is not None:
        for name, value in record.admission_headers.items():
            if name not in response:  # a refusal's own headers (its 402, 429) win
                response[name] = value
    return response


def finish(
    caller: Caller,
    record: RequestRecord,
    *,
    status: int,
    target: Target | None = None,
    usage: dict[str, Any] | None = None,
    error_code: str = "",
    ttfb_ms: int | None = None,
    stream_broke: bool = False,
    elapsed_s: float | None = None,
) -> Effects:
    """The trace, live observations, cache pin and metrics of a finished request.
    `stream_broke`: the upstream failed after the stream was committed, which counts
    against it (R-EXE-4). `elapsed_s`: when it finished, on the caller's clock (default:
    now), for a request recorded after its answer left."""
    ep = target.endpoint if target else None
    if elapsed_s is None:
        elapsed_s = caller.elapsed_s()
    now = caller.started_at + elapsed_s
    effects = Effects()
    effects.traces.append(
        {
            "id": caller.trace_id,
            "request_id": caller.request_id,
            "workspace_id": caller.workspace.id,
            "api_key_id": caller.key.pk,
            "operation": record.operation,
            "requested_model": record.requested_model[:200],
            "model": ep.model if ep else "",
            "provider": ep.provider if ep else "",
            "endpoint": ep.id if ep else "",
            "stream": record.stream,
            "status_code": status,
            "error_code": error_code,
            "decision": decision_record(record),
            "attempts": [a.as_dict() for a in record.attempts],
            "usage": usage or {},
            "cost_micros": cost_micros(usage, target),
            "latency_ms": int(elapsed_s * 1000),
            "ttfb_ms": ttfb_ms,
            "purpose": caller.purpose,
            "parent_id": caller.parent_id,
            "created_at": datetime.fromtimestamp(now, UTC),
            "tier": record.tier.verdict.tier if record.tier is not None else "",
            "session_id": record.session_id,
            **_route_columns(record.route),
        }
    )
    _observe_live(record, caller.workspace.id, usage, stream_broke, now, effects)
    if status == 200 and not stream_broke:
        note_cache_read(record.session, record.routing, target, usage, now, effects)
    _count(record, status, target, usage, ttfb_ms, effects)
    return effects


def _count(
    record: RequestRecord,
    status: int,
    target: Target | None,
    usage: dict[str, Any] | None,
    ttfb_ms: int | None,
    effects: Effects,
) -> None:
    """Prometheus counters and histograms of one finished request."""
    ep = target.endpoint if target else None
    for decision in record.decisions:
        if decision["ordered"]:
            effects.count(metrics.SELECTIONS, decision["ordered"][0], decision["mode"])
        for rejection in decision["rejected"]:
            effects.count(metrics.REJECTIONS, rejection["reason"])
    model = ep.model if ep else ""
    provider = ep.provider if ep else ""
    # R-OBS-3, R-BEY-9: a routed request is told by its route's slug and version; both are
    # empty without a route, so the label set is the same on every series
    route, version = (record.route.slug, str(record.route.version)) if record.route else ("", "")
    effects.count(metrics.REQUESTS, record.operation, model, provider, str(status), route, version)
    for attempt in record.attempts:
        effects.count(
            metrics.ATTEMPTS, attempt.provider, attempt.endpoint, attempt.status, route, version
        )
    if ep is None:
        return
    ok = [a for a in record.attempts if a.status == "ok"]
    if ok:
        effects.sample(metrics.UPSTREAM_LATENCY, ep.provider, value=ok[-1].latency_ms / 1000)
    if ttfb_ms is not None:
        effects.sample(metrics.TIME_TO_FIRST_BYTE, ep.provider, value=ttfb_ms / 1000)
    if usage:
        effects.count(metrics.TOKENS, model, "prompt", by=int(usage.get("prompt_tokens") or 0))
        completion = int(usage.get("completion_tokens") or 0)
        effects.count(metrics.TOKENS, model, "completion", by=completion)


def _observe_live(
    record: RequestRecord,
    workspace_id: int,
    usage: dict[str, Any] | None,
    stream_broke: bool,
    now: float,
    effects: Effects,
) -> None:
    """Every attempt, for the live metrics the router reads (R-OBS-2, R-EXE-2, R-EXE-4);
    one made with the workspace's own key also for that credential's series, which
    only its workspace is shown (R-BEY-7) and the router never reads — and a refusal of
    that key for the credential's alone, so one tenant's bad key cannot make the shared
    endpoint unhealthy for every tenant. Cooldowns were fed as each attempt ended
    (request_state.AttemptObserver)."""
    completion = int((usage or {}).get("completion_tokens") or 0)
    for attempt in record.attempts:
        if attempt.http_status in CLIENT_FAULTS:
            continue
        ok = attempt.status == "ok" and not (stream_broke and attempt is record.attempts[-1])
        seconds = attempt.latency_ms / 1000
        tokens_per_s = completion / seconds if ok and not record.stream and seconds > 0 else None
        observation = Observation(
            at=now,
            ok=ok,
            latency_ms=float(attempt.latency_ms) if attempt.status == "ok" else None,
            tokens_per_s=tokens_per_s if completion else None,
            kind="" if ok else failure_kind(attempt.http_status),
            streamed=record.stream,
        )
        if not attempt.blames_credential:  # a refused own key is not the endpoint's health
            effects.observations.append((attempt.endpoint, attempt.provider, observation))
        if attempt.own_credential:
            series = credential_series(workspace_id, attempt.provider)
            effects.credential_observations.append((series, attempt.provider, observation))
