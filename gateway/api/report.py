"""What a finished request tells: the `switchyard` block and headers for the client
(SPEC R-API-4, R-API-5), the trace for the audit log and the Prometheus counters.
All three are built from the same `CallContext`, so they cannot disagree."""

from __future__ import annotations

import time
from typing import Any

import orjson
from django.http import HttpResponseBase

from gateway import metrics, runtime
from gateway.api.affinity import note_cache_read
from gateway.api.context import CallContext
from gateway.api.plan import request_json
from gateway.execute import Target
from routing.attempts import AttemptFailed
from routing.decide import reason_for
from routing.live import Observation, failure_kind
from routing.types import EndpointInfo


def cost_micros(usage: dict[str, Any] | None, target: Target | None) -> int:
    """USD × 1e6. Price is USD per 1M tokens, so tokens × price is micro-dollars."""
    if not usage or target is None:
        return 0
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    ep = target.endpoint
    return round(prompt * ep.price_input + completion * ep.price_output)


def decision_record(ctx: CallContext) -> dict[str, Any]:
    """What the trace keeps of the routing: the resolved request (inputs, no content) and
    every model's decision, exactly as `explain` shows them."""
    if ctx.routing is None:
        return {}
    record: dict[str, Any] = {"request": request_json(ctx.routing), "decisions": ctx.decisions}
    if ctx.tier is not None:
        record["tier"] = ctx.tier.as_json()
    if ctx.auto is not None:
        record["auto"] = ctx.auto
    return record


def switchyard_block(
    ctx: CallContext, target: Target, usage: dict[str, Any] | None
) -> dict[str, Any]:
    ep = target.endpoint
    model = ctx.snapshot.models.get(ep.model)
    return {
        "trace_id": str(ctx.trace_id),
        "request_id": ctx.request_id,
        "model": ep.model,
        "model_version": model.version if model else "",
        "provider": ep.provider,
        "endpoint": ep.id,
        "region": ep.region,
        "sovereignty_class": ep.sovereignty_class,
        "policy_id": ctx.workspace.policy_id,
        "retention": ctx.workspace.retention,
        "cost_estimate_usd": cost_micros(usage, target) / 1_000_000,
        # told for the endpoint that served, which a pin or a failover may have moved
        "routing_reason": reason_for(ctx.decision, ep) if ctx.decision else "",
        "algorithm": ctx.decision.algorithm if ctx.decision else "",
        "attempts": len(ctx.attempts),
    }


def add_headers(response: HttpResponseBase, ctx: CallContext) -> HttpResponseBase:
    response["X-Switchyard-Trace-Id"] = str(ctx.trace_id)
    if ctx.tier is not None:
        for name, value in ctx.tier.headers().items():
            response[name] = value
    response["X-Switchyard-Attempts"] = orjson.dumps([a.as_dict() for a in ctx.attempts]).decode()
    return response


def finish(
    ctx: CallContext,
    *,
    status: int,
    target: Target | None = None,
    usage: dict[str, Any] | None = None,
    error_code: str = "",
    ttfb_ms: int | None = None,
    stream_broke: bool = False,
) -> None:
    """Record the trace and metrics of a finished request (never blocks). `stream_broke`:
    the upstream failed after the stream was committed, which counts against it (R-EXE-4)."""
    ep = target.endpoint if target else None
    runtime.traces().record(
        {
            "id": ctx.trace_id,
            "request_id": ctx.request_id,
            "workspace_id": ctx.workspace.id,
            "api_key_id": ctx.key.pk,
            "operation": ctx.operation,
            "requested_model": ctx.requested_model[:200],
            "model": ep.model if ep else "",
            "provider": ep.provider if ep else "",
            "endpoint": ep.id if ep else "",
            "stream": ctx.stream,
            "status_code": status,
            "error_code": error_code,
            "decision": decision_record(ctx),
            "attempts": [a.as_dict() for a in ctx.attempts],
            "usage": usage or {},
            "cost_micros": cost_micros(usage, target),
            "latency_ms": ctx.elapsed_ms(),
            "ttfb_ms": ttfb_ms,
            "purpose": ctx.purpose,
            "parent_id": ctx.parent_id,
        }
    )
    _observe_live(ctx, usage, stream_broke)
    if status == 200 and not stream_broke:
        note_cache_read(ctx, target, usage)
    _count(ctx, status, target, usage, ttfb_ms)


def _count(
    ctx: CallContext,
    status: int,
    target: Target | None,
    usage: dict[str, Any] | None,
    ttfb_ms: int | None,
) -> None:
    """Prometheus counters and histograms of one finished request."""
    ep = target.endpoint if target else None
    for decision in ctx.decisions:
        if decision["ordered"]:
            metrics.SELECTIONS.labels(decision["ordered"][0], decision["mode"]).inc()
        for rejection in decision["rejected"]:
            metrics.REJECTIONS.labels(rejection["reason"]).inc()
    model = ep.model if ep else ""
    metrics.REQUESTS.labels(ctx.operation, model, ep.provider if ep else "", str(status)).inc()
    for attempt in ctx.attempts:
        metrics.ATTEMPTS.labels(attempt.provider, attempt.endpoint, attempt.status).inc()
    if ep is not None:
        ok = [a for a in ctx.attempts if a.status == "ok"]
        if ok:
            metrics.UPSTREAM_LATENCY.labels(ep.provider).observe(ok[-1].latency_ms / 1000)
        if ttfb_ms is not None:
            metrics.TIME_TO_FIRST_BYTE.labels(ep.provider).observe(ttfb_ms / 1000)
        if usage:
            metrics.TOKENS.labels(model, "prompt").inc(int(usage.get("prompt_tokens") or 0))
            metrics.TOKENS.labels(model, "completion").inc(int(usage.get("completion_tokens") or 0))


CLIENT_FAULTS = frozenset({400, 413, 422})  # the request's fault, not the endpoint's


def _observe_live(ctx: CallContext, usage: dict[str, Any] | None, stream_broke: bool) -> None:
    """Feed every attempt into the live metrics the router reads (R-OBS-2, R-EXE-2,
    R-EXE-4). Cooldowns are fed as each attempt ends (`AttemptRecorder`)."""
    now = time.time()
    live = runtime.live()
    completion = int((usage or {}).get("completion_tokens") or 0)
    for attempt in ctx.attempts:
        if attempt.http_status in CLIENT_FAULTS:
            continue
        ok = attempt.status == "ok" and not (stream_broke and attempt is ctx.attempts[-1])
        seconds = attempt.latency_ms / 1000
        tokens_per_s = completion / seconds if ok and not ctx.stream and seconds > 0 else None
        observation = Observation(
            at=now,
            ok=ok,
            latency_ms=float(attempt.latency_ms) if attempt.status == "ok" else None,
            tokens_per_s=tokens_per_s if completion else None,
            kind="" if ok else failure_kind(attempt.http_status),
        )
        live.observe(attempt.endpoint, attempt.provider, observation)


# Failures that say nothing about the endpoint: the request cannot be expressed in its API,
# or this workspace has no credential for it.
NOT_THE_ENDPOINTS = frozenset({"unsupported_request", "no_credential"})


class AttemptRecorder:
    """The executor's observer for one request: the adaptive state's in-flight counts and
    latency samples, and the cooldowns (R-EXE-3) as soon as each attempt ends — not when the
    whole request ends, so a 429 storm cools the endpoint one failover sooner for the
    requests arriving meanwhile. Cooldown lengths follow the workspace's policy."""

    def __init__(self, ctx: CallContext, adaptive: runtime.AdaptiveObserver) -> None:
        self.cooldown = ctx.workspace.cooldown  # base_s / max_s, if the policy sets them
        self.adaptive = adaptive

    def started(self, endpoint: EndpointInfo) -> None:
        self.adaptive.started(endpoint)

    def finished(
        self, endpoint: EndpointInfo, latency_ms: float | None, failure: AttemptFailed | None
    ) -> None:
        self.adaptive.finished(endpoint, latency_ms, failure)
        cooldowns = runtime.cooldowns()
        if failure is None:
            if latency_ms is not None:
                cooldowns.success(endpoint.id)
            return
        if failure.kind in NOT_THE_ENDPOINTS or failure.http_status in CLIENT_FAULTS:
            return
        started = cooldowns.failure(
            endpoint.id,
            failure.http_status,
            time.time(),
            failure.retry_after,
            base_s=self.cooldown.get("base_s"),
            max_s=self.cooldown.get("max_s"),
        )
        if started is not None:
            metrics.COOLDOWNS.labels(endpoint.provider, endpoint.id, started.reason).inc()
