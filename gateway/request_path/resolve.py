"""Step 3 of the request path: from a parsed body to the `RoutingRequest` the engine
decides — the smart tier rewrites a tiered alias (tiers.py), the model field, suffixes,
qualifiers and routing fields are resolved (routing/engine/resolve.py), the auto router
classifies the workload (auto.py), the route seed is read and the session found
(affinity.py). Pure but for the classifier's child request, which is handed in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gateway.errors import ApiError, invalid
from gateway.request_path.affinity import Session, session_of
from gateway.request_path.auto import ChildRequest, classify_auto
from gateway.request_path.caller import Caller
from gateway.request_path.tiers import TierOutcome, apply_tiers
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


async def resolve_request(
    caller: Caller,
    body: dict[str, Any],
    headers: Mapping[str, str],
    state: RoutingState,
    effects: Effects,
    *,
    operation: str,
    smart: bool,
    ask: ChildRequest | None,
) -> Resolved:
    """`operation`: the engine's (chat | embeddings). `smart`: tiers and the auto router
    apply (chat-shaped requests). `ask`: serves the classifier's child request (None: a dry
    run, which calls no model)."""
    tier = None
    if smart:
        body = with_defaults(body, caller.key.preset)  # where the request is silent (R-PRE-1)
        body, tier = apply_tiers(caller, headers, body, state, effects)
    routing = resolve_model(caller, body, headers, operation)
    check_allowed(caller.key.allowed, routing, tier)
    routing = replace(routing, data_class=data_class_of(caller, routing, headers))
    auto = None
    if smart:
        verdict = await classify_auto(caller, body, routing, ask, effects)
        if verdict is not None:
            routing, auto = verdict.routing, verdict.record
    return Resolved(
        body=body,
        routing=routing,
        seed=route_seed(caller, headers),
        tier=tier,
        auto=auto,
        session=session_of(caller, headers, body, routing, state),
    )


def resolve_model(
    caller: Caller, body: dict[str, Any], headers: Mapping[str, str], operation: str
) -> RoutingRequest:
    try:
        return resolve(
            body,
            headers,
            caller.snapshot.catalog,
            operation=operation,
            workspace_mode=caller.workspace.policy.routing_mode,
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


def data_class_of(caller: Caller, routing: RoutingRequest, headers: Mapping[str, str]) -> str:
    try:
        return request_data_class(routing.metadata, headers, caller.policy.data_classes)
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
    (R-PRE-1, R-KEY-1): the name the client asked for — a tiered alias as written — and
    each fallback. `auto` is never refused here: its candidates are narrowed instead."""
    if allowed is None:
        return
    asked = ((tier.alias if tier else routing.model, "model"),
             *((model, "models") for model in routing.fallbacks))  # fmt: skip
    for model, param in asked:
        if model is not None and model not in allowed:
            raise ApiError(
                403, f"This API key may not use the model `{model}`.",
                code="model_not_allowed", param=param,
            )  # fmt: skip


def route_seed(caller: Caller, headers: Mapping[str, str]) -> int:
    sent = headers.get(SEED_HEADER, "")
    if sent:
        if not sent.isdigit() or int(sent) > MAX_SEED:
            raise invalid(
                f"{SEED_HEADER} must be an integer from 0 to {MAX_SEED}", param=SEED_HEADER
            )
        return int(sent)
    return caller.trace_id.int & MAX_SEED
