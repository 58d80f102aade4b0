"""Part of step 3 (resolve): the key's dynamic route (SPEC R-ROUTE-1, D-23, D-27). Of the
routes attached to the key, the first deployed one whose `models` patterns match the
requested model walks the request (routing/engine/routes/evaluate.py) with the key's usage
this period; a request no attached route matches is resolved as usual.

A reject node ends the request with its status (402 `budget_exceeded`, 429 `rate_limited`
with `Retry-After`, 403 `route_rejected`). A model node rewrites what the request asks for
before the model field is resolved: its model (or the requested one), its fallbacks —
replacing the client's, and none at all with `allow_fallbacks: false` — and after
resolving, its mode (below a mode the request asked for itself), its provider object
(narrowing only) and its affinity switches. A fixed model so beats the auto router, and the
record keeps the override. Pure over the request and its `RoutingState`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gateway import metrics
from gateway.errors import ApiError, invalid
from gateway.request_path.caller import Caller
from gateway.state.request_state import Effects, RoutingState
from routing.engine.resolve import ResolveError, session_id_of
from routing.engine.routes import (
    AUTO,
    REQUESTED,
    ModelNode,
    RejectNode,
    Route,
    RouteFacts,
    RouteOutcome,
    evaluate,
    handles,
    narrow_provider,
    seconds_until_reset,
)
from routing.engine.types import AUTO_ALIASES, RoutingRequest

REJECT_CODES = {402: "budget_exceeded", 429: "rate_limited", 403: "route_rejected"}
# What a trace keeps of a routed key's request for replay (R-BEY-3): decision inputs only.
# Body fields that carry content are never kept, nor headers that carry credentials.
CONTENT_FIELDS = frozenset(
    {
        "messages",
        "input",
        "prompt",
        "instructions",
        "system",
        "tools",
        "tool_choice",
        "response_format",
        "functions",
        "logit_bias",
    }
)
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "cookie", "proxy-authorization"})
# Entries kept of the body, the headers and the metadata each, and characters of each. At
# least what the API admits of metadata (16 pairs of 512 characters, resolve.py), so that a
# condition on metadata replays exactly; and room beside the 9 to 12 `x-stainless-*`
# headers the official SDKs send for the client's own `x-` headers.
MAX_INPUTS = 32
MAX_INPUT_CHARS = 512
MAX_PROVIDER_CHARS = 2000  # the request's `provider` object, kept whole when this small
DEFAULT_RETRY_AFTER_S = 60  # a 429 no exceeded period explains (D-27)
ASKED_BY_REQUEST = frozenset({"suffix", "request"})  # modes a route does not override


@dataclass(frozen=True, slots=True)
class RouteChoice:
    """The route that handled a request and what its walk decided."""

    slug: str
    version: int
    outcome: RouteOutcome
    requested_model: str  # as the client wrote it

    @property
    def node(self) -> ModelNode | None:
        return self.outcome.model

    def as_json(self) -> dict[str, Any]:
        """The decision record's `route` (R-BEY-1): the nodes visited with why each exit
        was taken, the model chosen and whether it overrode the auto router."""
        node = self.node
        model = (
            None
            if node is None
            else (self.requested_model if node.model == REQUESTED else node.model)
        )
        return {
            "slug": self.slug,
            "version": self.version,
            "nodes": [
                {"node": s.node, "type": s.type, "exit": s.exit, "next": s.next, "why": s.why}
                for s in self.outcome.visited
            ],
            "terminal": self.outcome.visited[-1].node,
            "model": model,
            "overrode_auto": bool(model and self.requested_model in AUTO_ALIASES and model != AUTO),
        }


class RouteRejected(ApiError):
    """A reject node's answer; carries the route record, so the trace keeps the walk."""

    def __init__(self, choice: RouteChoice, node: RejectNode, now: float) -> None:
        headers = {}
        if node.status == 429:
            period = choice.outcome.refused_period
            wait = seconds_until_reset(period, now) if period else DEFAULT_RETRY_AFTER_S
            headers["Retry-After"] = str(wait)
        super().__init__(node.status, node.message, code=REJECT_CODES[node.status], headers=headers)
        self.route = choice
        self.inputs: dict[str, Any] | None = None  # set by the resolve step, for the trace


def route_facts(
    caller: Caller,
    body: dict[str, Any],
    headers: Mapping[str, str],
    *,
    operation: str,
    seed: int,
) -> RouteFacts | None:
    """What a route may read of the request; None for a key without routes or a request
    that names no model (the model field's validation refuses it)."""
    if not caller.key.routes:
        return None
    requested = _requested_model(body)
    if requested is None:
        return None
    try:
        session_id = session_id_of(body, headers)
    except ResolveError as error:
        raise invalid(error.message, param=error.param) from None
    metadata = body.get("metadata")
    cache_key = body.get("prompt_cache_key")
    return RouteFacts(
        body=body,
        headers=headers,  # Django's request.headers: found by lowercase name as by any other
        metadata=metadata if isinstance(metadata, Mapping) else {},
        operation=operation,
        requested_model=requested,
        session_id=session_id,
        prompt_cache_key=cache_key if isinstance(cache_key, str) else None,
        key_id=caller.key.pk,
        seed=seed,
    )


def route_request(
    caller: Caller,
    body: dict[str, Any],
    facts: RouteFacts | None,
    state: RoutingState,
    effects: Effects,
) -> tuple[dict[str, Any], RouteChoice | None]:
    """The body the rest of resolve reads, and the route that handled it (None: none)."""
    if facts is None:
        return body, None
    deployed = _handling(caller, facts.requested_model)
    if deployed is None:
        return body, None
    handling, version = deployed
    outcome = evaluate(handling, facts, state.usage.of(caller.key.pk, state.now))
    choice = RouteChoice(handling.slug, version, outcome, facts.requested_model)
    effects.count(metrics.ROUTE_REQUESTS, handling.slug, str(version), outcome.visited[-1].node)
    if outcome.reject is not None:
        raise RouteRejected(choice, outcome.reject, state.now)
    assert outcome.model is not None
    return _rewritten(body, outcome.model, facts.requested_model), choice


def route_inputs(
    facts: RouteFacts, body: Mapping[str, Any], usage: Mapping[str, list[int]]
) -> dict[str, Any]:
    """What a replay of another route version needs of this request (R-BEY-3): the facts a
    condition or split may read — scalar body fields that are not content, the `x-`
    headers but credentials, the metadata, the session and cache keys, the request's own
    `provider` object — and the key's usage a rate or budget node read. Bounded."""
    provider = body.get("provider")  # the client's own, before a route narrows it
    kept_provider = isinstance(provider, Mapping) and len(str(provider)) <= MAX_PROVIDER_CHARS
    return {
        "requested_model": facts.requested_model,
        "operation": facts.operation,
        "session_id": facts.session_id,
        "prompt_cache_key": facts.prompt_cache_key,
        "seed": facts.seed,
        "body": _bounded({k: v for k, v in body.items() if k not in CONTENT_FIELDS}),
        "headers": _bounded(
            {
                name.lower(): facts.headers[name]
                for name in facts.headers
                if name[:2].lower() == "x-" and name.lower() not in SECRET_HEADERS
            }
        ),
        "metadata": _bounded(facts.metadata),
        "provider": provider if kept_provider else None,
        "usage": usage,  # {period: [requests, cost_micros]}
    }


def _bounded(values: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in values.items():
        if len(kept) == MAX_INPUTS:
            break
        if isinstance(value, str):
            kept[str(key)[:MAX_INPUT_CHARS]] = value[:MAX_INPUT_CHARS]
        elif value is None or isinstance(value, bool | int | float):
            kept[str(key)[:MAX_INPUT_CHARS]] = value
    return kept


def adjust(routing: RoutingRequest, choice: RouteChoice | None) -> RoutingRequest:
    """The resolved request with what the route's model node says beyond the model."""
    node = choice.node if choice is not None else None
    if node is None or not _adjusts(node):
        return routing
    changes: dict[str, Any] = {"provider": narrow_provider(routing.provider, node.provider)}
    if node.mode is not None and routing.mode_source not in ASKED_BY_REQUEST:
        changes.update(mode=node.mode, mode_source="route")
    if not node.allow_fallbacks:
        changes["fallbacks"] = ()
    if node.session_affinity is not None:
        changes["session_affinity"] = node.session_affinity and routing.session_affinity
    if node.cache_affinity is False:
        extra = {**changes["provider"].extra, "cache_aware_routing": False}
        changes["provider"] = replace(changes["provider"], extra=extra)
    return replace(routing, **changes)


def _adjusts(node: ModelNode) -> bool:
    """False for a node that only names its model (and fallbacks): most of them."""
    return not (
        node.mode is None
        and node.provider is None
        and node.allow_fallbacks
        and node.session_affinity is None
        and node.cache_affinity is None
    )


def _requested_model(body: Mapping[str, Any]) -> str | None:
    model = body.get("model")
    if model is None and isinstance(body.get("models"), list) and body["models"]:
        model = body["models"][0]
    return model if isinstance(model, str) else None


def _handling(caller: Caller, requested_model: str) -> tuple[Route, int] | None:
    """The first of the key's deployed routes that handles the model, and its deployed
    version (D-23). A deployed route that no longer validates (`DeployedRoute.problem`)
    before it, or anywhere when none handles the model, refuses the request: it might
    have handled it (503)."""
    broken, found = None, None
    for slug in caller.key.routes:
        entry = caller.workspace.routes.get(slug)
        if entry is None:
            continue  # attached, never deployed
        if entry.route is None:
            broken = broken or entry
        elif handles(entry.route, requested_model):
            found = entry.route, entry.version
            break
    if broken is not None:
        raise ApiError(
            503, f"Route `{broken.slug}` cannot be used: {broken.problem}", code="route_unavailable"
        )
    return found


def _rewritten(body: dict[str, Any], node: ModelNode, requested: str) -> dict[str, Any]:
    model = requested if node.model == REQUESTED else node.model
    if node.model == REQUESTED and not node.fallbacks:
        return {**body, "model": model}  # the request's own fallbacks stay
    fallbacks = [requested if f == REQUESTED else f for f in node.fallbacks]
    rewritten = {k: v for k, v in body.items() if k != "models"}
    rewritten["model"] = model
    if fallbacks and node.allow_fallbacks:
        rewritten["models"] = fallbacks  # with `model` given, every entry is a fallback
    return rewritten
