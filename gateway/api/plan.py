"""From a parsed body to routing decisions: resolve the request (routing/resolve.py),
expand virtual models into a model chain, and decide each model in turn
(routing/decide.py). Pure steps fed from the snapshot and live metrics; no upstream I/O,
so `POST /v1/routing/explain` runs exactly this and stops."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from django.http import HttpRequest

from gateway import runtime
from gateway.api.context import CallContext
from gateway.api.errors import ApiError, invalid
from gateway.snapshot import Snapshot
from routing.adaptive import adaptive_order
from routing.affinity import keep_session
from routing.autorouter import first_model_only, narrow_for_auto
from routing.benchmarks import relevant
from routing.decide import decide
from routing.resolve import ResolveError, UnknownModel, resolve
from routing.scoring import blended_price
from routing.sessions import detect_session
from routing.types import Decision, LiveState, RoutingRequest
from routing.virtual import order_targets

MAX_VIRTUAL_DEPTH = 4  # virtual models may nest; deeper chains are configuration mistakes
SEED_HEADER = "X-Switchyard-Route-Seed"  # replays a weighted-random draw (explain ↔ trace)
MAX_SEED = 2**63 - 1


def resolve_request(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], operation: str
) -> RoutingRequest:
    try:
        routing_request = resolve(
            body,
            request.headers,
            ctx.snapshot.catalog,
            operation=operation,
            workspace_mode=ctx.workspace.policy.routing_mode,
        )
    except ResolveError as error:
        raise invalid(error.message, param=error.param) from None
    except UnknownModel as error:
        raise ApiError(
            404,
            f"The model `{error.model}` does not exist.",
            code="model_not_found",
            param=error.param,
        ) from None
    ctx.requested_model = routing_request.requested_model
    return routing_request


def route_seed(ctx: CallContext, request: HttpRequest) -> int:
    sent = request.headers.get(SEED_HEADER, "")
    if sent:
        if not sent.isdigit() or int(sent) > MAX_SEED:
            raise invalid(
                f"{SEED_HEADER} must be an integer from 0 to {MAX_SEED}", param=SEED_HEADER
            )
        return int(sent)
    return ctx.trace_id.int & MAX_SEED


def _cheapest_price(snap: Snapshot, slug: str) -> float:
    prices = [blended_price(e) for e in snap.endpoints.get(slug, ())]
    return min(prices) if prices else float("inf")


def _expand(snap: Snapshot, slug: str, rng: random.Random, depth: int) -> Iterator[str]:
    entry = snap.virtual.get(slug)
    if entry is None:
        yield slug
        return
    if depth >= MAX_VIRTUAL_DEPTH:
        return
    cheapest = {target: _cheapest_price(snap, target) for target, _weight in entry.targets}
    if entry.strategy == "adaptive":
        ordered = _adaptive_order(snap, entry.targets, cheapest, rng)
    else:
        ordered = order_targets(
            entry.strategy,
            entry.targets,
            cheapest_price=cheapest,
            rng=rng,
            counter=runtime.next_round_robin(slug),
        )
    for target in ordered:
        yield from _expand(snap, target, rng, depth + 1)


def _adaptive_order(
    snap: Snapshot, targets: tuple[tuple[str, float], ...], cheapest: dict[str, float],
    rng: random.Random,
) -> tuple[str, ...]:  # fmt: skip
    """R-EXE-5 for a virtual model: P2C on peak-EWMA load among its targets (models)."""
    now = time.time()
    live = runtime.live().state(now)
    cooling_endpoints = runtime.cooldowns().cooling(now)
    error_rate: dict[str, float] = {}
    cooling: set[str] = set()
    for slug, _weight in targets:
        endpoints = snap.endpoints.get(slug, ())
        rates = [live.stats[e.id].error_rate or 0.0 for e in endpoints if e.id in live.stats]
        error_rate[slug] = sum(rates) / len(rates) if rates else 0.0
        if endpoints and all(e.id in cooling_endpoints for e in endpoints):
            cooling.add(slug)
    return adaptive_order(targets, state=runtime.adaptive(), price=cheapest,
                          error_rate=error_rate, cooling=frozenset(cooling), rng=rng)  # fmt: skip


def model_chain(snap: Snapshot, request: RoutingRequest, rng: random.Random) -> list[str | None]:
    """The models to try in order: the primary, then the fallback chain, with virtual
    models replaced by their ordered targets. `[None]` for the auto router."""
    if request.auto:
        return [None]
    chain: list[str | None] = []
    for slug in (request.model, *request.fallbacks):
        if slug is None:
            continue
        for concrete in _expand(snap, slug, rng, 0):
            if concrete not in chain:
                chain.append(concrete)
    return chain


def decide_model(
    ctx: CallContext, request: RoutingRequest, model: str | None, rng: random.Random
) -> Decision:
    snap = ctx.snapshot
    step = replace(request, model=model)
    candidates = snap.all_endpoints if request.auto else snap.endpoints.get(model or "", ())
    now = time.time()
    live = replace(runtime.live().state(now), cooling=runtime.cooldowns().cooling(now))
    if not request.auto:
        return decide(candidates, step, ctx.workspace.policy, live, rng, now)
    auto = ctx.workspace.auto
    policy = narrow_for_auto(ctx.workspace.policy, auto, snap.endpoints.keys())
    decision = decide(candidates, step, policy, live, rng, now, objective=auto.objective)
    if auto.fallback:
        return decision
    ordered = first_model_only(decision.ordered)
    kept = {e.id for e in ordered}
    return replace(
        decision,
        ordered=ordered,
        scored=tuple(s for s in decision.scored if s.endpoint_id in kept),
        notes=(*decision.notes, "Auto-router fallback is off: only the top model is tried."),
    )


def decision_json(decision: Decision, model: str | None, seed: int) -> dict[str, Any]:
    """The one decision record (SPEC R-BEY-1): trace, explain and console all show this."""
    return {
        "model": model,
        "algorithm": decision.algorithm,
        "seed": seed,
        "mode": str(decision.mode),
        "mode_source": decision.mode_source,
        "reason": decision.reason,
        "notes": list(decision.notes),
        "ordered": [e.id for e in decision.ordered],
        "rejected": [{"endpoint": eid, "reason": str(reason)} for eid, reason in decision.rejected],
        "scored": [
            {
                "endpoint": s.endpoint_id,
                "score": s.score,
                "demoted": s.demoted,
                "multipliers": [{"name": n, "value": v} for n, v in s.multipliers],
                "factors": [
                    {
                        "name": f.name,
                        "value": f.value,
                        "normalized": f.normalized,
                        "weight": f.weight,
                        "contribution": f.contribution,
                    }
                    for f in s.factors
                ],
            }
            for s in decision.scored
        ],
    }


def auto_ranking(ctx: CallContext, decision: Decision, request: RoutingRequest) -> dict[str, Any]:
    """The auto router's model ranking (R-AUTO-3): the models in attempt order, each with
    its best endpoint's score and the benchmark ids its fit was read from."""
    scores = {s.endpoint_id: s.score for s in decision.scored}
    models: dict[str, dict[str, Any]] = {}
    for endpoint in decision.ordered:
        if endpoint.model not in models:
            models[endpoint.model] = {
                "model": endpoint.model,
                "endpoint": endpoint.id,
                "score": scores.get(endpoint.id),
                "benchmarks": [b for b, _s in relevant(endpoint.benchmarks, request.task)],
            }
    auto = ctx.workspace.auto
    return {
        "objective": auto.objective,
        "spend_caps": {"input": auto.max_input, "output": auto.max_output},
        "patterns": list(auto.patterns),
        "fallback": auto.fallback,
        "selected": next(iter(models), None),
        "fallback_order": list(models)[1:] if auto.fallback else [],
        "models": list(models.values()),
    }


def decision_entry(
    ctx: CallContext, decision: Decision, request: RoutingRequest, model: str | None, seed: int
) -> dict[str, Any]:
    """`decision_json`, with the auto router's ranking for an auto decision."""
    entry = decision_json(decision, model, seed)
    if request.auto:
        entry["auto_ranking"] = auto_ranking(ctx, decision, request)
    return entry


def request_json(request: RoutingRequest) -> dict[str, Any]:
    """The resolved request as stored in the trace: decision inputs, never content."""
    prefs = request.provider
    return {
        "requested_model": request.requested_model,
        "model": request.model,
        "auto": request.auto,
        "fallbacks": list(request.fallbacks),
        "pinned_provider": request.pinned_provider,
        "mode": str(request.mode),
        "mode_source": request.mode_source,
        "residency": request.residency,
        "task": request.task,
        "task_source": request.task_source,
        "language": request.language,
        "language_source": request.language_source,
        "has_image": request.has_image,
        "has_tools": request.has_tools,
        "input_tokens": request.input_tokens,
        "output_tokens": request.output_tokens,
        "complexity": request.complexity,
        "provider": {
            "order": list(prefs.order),
            "allow_fallbacks": prefs.allow_fallbacks,
            "only": sorted(prefs.only),
            "ignore": sorted(prefs.ignore),
            "sort": str(prefs.sort) if prefs.sort else None,
            "max_price": {
                "prompt": prefs.max_price_prompt,
                "completion": prefs.max_price_completion,
            },
            "preferred_min_throughput": prefs.preferred_min_throughput,
            "regions": sorted(prefs.regions),
        },
    }


def session_key(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], routing: RoutingRequest
) -> str | None:
    """The request's session (R-EXE-7 detection order), scoped to workspace and key; None
    when session keeping is off for it (no hashing of messages that nothing will use)."""
    if not _affinity_on(routing):
        return None
    key, _source = detect_session(
        request.headers,
        body,
        workspace_id=ctx.workspace.id,
        api_key_id=ctx.key.pk,
        model=ctx.requested_model,
    )
    return key


def _affinity_on(routing: RoutingRequest) -> bool:
    """Installation switch (SWITCHYARD_SESSION_AFFINITY) and per-request opt-out."""
    return runtime.gateway_settings().session_affinity and routing.session_affinity


def _pin_key(session: str, model: str | None) -> str:
    return f"{session}|{model or 'auto'}"


def keep_session_pin(
    routing: RoutingRequest, decision: Decision, model: str | None, session: str | None
) -> tuple[Decision, str | None]:
    """Apply the session's endpoint pin to a decision (reads the pin, writes nothing)."""
    if session is None or not _affinity_on(routing):
        return decision, None
    now = time.time()
    pinned = runtime.session_pins().get(_pin_key(session, model), now)
    live = LiveState(cooling=runtime.cooldowns().cooling(now))
    return keep_session(decision, pinned, live)


def pin_session(
    session: str | None, routing: RoutingRequest, model: str | None, endpoint: str
) -> None:
    """After a success: the session stays on the endpoint that served it."""
    if session is not None and _affinity_on(routing):
        runtime.session_pins().pin(_pin_key(session, model), endpoint, time.time())
