"""Step 3 of the request path: from a parsed body to the `RoutingRequest` the engine
decides — the key's preset fills its defaults (routing/engine/key_scope.py), the key's
dynamic route may choose the model (routes.py), the smart tier rewrites a tiered alias
(tiers.py), the model field, suffixes, qualifiers and routing fields are resolved
(routing/engine/resolve.py) and checked against the key's scope, the data class is found,
the auto router classifies the workload (auto.py), and the session is found
(affinity.py). Pure but for the classifier's child request, which is handed in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.errors import ApiError, invalid
from gateway.request_path.caller import Caller
from gateway.request_path.resolve.affinity import Session, session_of
from gateway.request_path.resolve.auto import ChildRequest, classify_auto
from gateway.request_path.resolve.routes import (
    RouteChoice,
    RouteRejected,
    adjust,
    route_facts,
    route_inputs,
    route_request,
)
from gateway.request_path.resolve.tiers import TierOutcome, apply_tiers
from gateway.state.request_state import Effects, RoutingState
from routing.engine.data_classes import DataClassNotAllowed, request_data_class
from routing.engine.key_scope import with_defaults
from routing.engine.resolve import ResolveError, UnknownModel, resolve
from routing.engine.types import RoutingRequest

SEED_HEADER = "X-Switchyard-Route-Seed"  # replays a weighted-random draw (explain ↔ trace)
MAX_SEED = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Resolved:
    body: dict[str, Any]  # the body to send: a tiered alias rewritten to its target
    routing: RoutingRequest
    seed: int  # of the request's random draws
    tier: TierOutcome | None = None
    auto: dict[str, Any] | None = None  # the auto router's workload verdict (R-AUTO-2)
    session: Session | None = None
    route: RouteChoice | None = None  # the dynamic route that handled it (R-ROUTE-1)
    route_inputs: dict[str, Any] | None = None  # what a replay needs (R-BEY-3)


async def resolve_request(
    caller: Caller,
    body: dict[str, Any],
    headers: Mapping[str, str],
    state: RoutingState,
    effects: Effects,
    *,
    operation: str,
    route_operation: str,
    smart: bool,
    ask: ChildRequest | None,
) -> Resolved:
    """`operation`: the engine's (chat | embeddings); `route_operation`: the API's, which a
    route's `endpoint` condition compares (`chat.completions`). `smart`: tiers and the auto
    router apply (chat-shaped requests). `ask`: serves the classifier's child request (None:
    a dry run, which calls no model)."""
    tier = None
    seed = route_seed(caller, headers)
    if smart:
        body = with_defaults(body, caller.key.preset)  # where the request is silent (R-PRE-1)
    facts = route_facts(caller, body, headers, operation=route_operation, seed=seed)
    inputs = None
    if facts is not None:  # a key with routes: its traces keep what a replay needs
        inputs = route_inputs(facts, body, state.usage.of(caller.key.pk, state.now).as_json())
    try:
        body, route = route_request(caller, body, facts, state, effects)
    except RouteRejected as rejected:
        rejected.inputs = inputs  # a refused request is replayed too
        raise
    if smart:
        body, tier = apply_tiers(caller, headers, body, state, effects)
    data_class = data_class_of(caller, body, headers)
    routing = adjust(resolve_model(caller, body, headers, operation, data_class), route)
    check_allowed(caller.key.allowed, routing, tier)
    auto = None
    if smart:
        verdict = await classify_auto(caller, body, routing, ask, effects)
        if verdict is not None:
            routing, auto = verdict.routing, verdict.record
    return Resolved(
        body=body,
        routing=routing,
        seed=seed,
        tier=tier,
        auto=auto,
        session=session_of(
            caller, headers, body, routing, state, route.node if route is not None else None
        ),
        route=route,
        route_inputs=inputs,
    )


def resolve_model(
    caller: Caller,
    body: dict[str, Any],
    headers: Mapping[str, str],
    operation: str,
    data_class: str | None = None,
) -> RoutingRequest:
    try:
        return resolve(
            body,
            headers,
            caller.snapshot.catalog,
            operation=operation,
            workspace_mode=caller.workspace.policy.routing_mode,
            data_class=data_class,
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


def data_class_of(caller: Caller, body: dict[str, Any], headers: Mapping[str, str]) -> str:
    """D-22. A `metadata` of the wrong shape is left to the model field's validation."""
    metadata = body.get("metadata")
    named = metadata.get("data_class") if isinstance(metadata, Mapping) else None
    try:
        return request_data_class(
            named if isinstance(named, str) else None, headers, caller.policy.data_classes
        )
    except ResolveError as error:
        raise invalid(error.message, param=error.param) from None
    except DataClassNotAllowed as error:
        raise ApiError(
            403, str(error), code="data_class_not_allowed", param="metadata.data_class"
        ) from None


def check_allowed(
    allowed: frozenset[str] | None, routing: RoutingRequest, tier: TierOutcome | None
) -> None:
    """403 `model_not_allowed` for a model the key's preset or allowed patterns exclude
    (R-PRE-1, R-KEY-1): the name asked for — a tiered alias as written, or the model a
    route chose (a route never leaves the key's scope, R-BEY-5) — and each fallback. `auto`
    is never refused here: its candidates are narrowed instead."""
    if allowed is None:
        return
    asked = (
        (tier.alias if tier else routing.model, "model"),
        *((model, "models") for model in routing.fallbacks),
    )
    for model, param in asked:
        if model is not None and model not in allowed:
            raise ApiError(
                403,
                f"This API key may not use the model `{model}`.",
                code="model_not_allowed",
                param=param,
            )


def route_seed(caller: Caller, headers: Mapping[str, str]) -> int:
    sent = headers.get(SEED_HEADER, "")
    if sent:
        if not sent.isdigit() or int(sent) > MAX_SEED:
            raise invalid(
                f"{SEED_HEADER} must be an integer from 0 to {MAX_SEED}", param=SEED_HEADER
            )
        return int(sent)
    return caller.trace_id.int & MAX_SEED
