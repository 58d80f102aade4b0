"""The routing decision: filter a model's endpoints in the contract's order, then order
the survivors. Pure — values in, a `Decision` out — so it is deterministic and testable
without a database, a network or a clock.

This is the foundation's ordering (cheapest first); the routing-engine issue replaces the
ordering with the scoring modes while keeping the filter and its reason strings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from routing.types import Decision, EndpointInfo, PolicyView, Reason, RouteRequest

ALGORITHM = "foundation-cheapest-v1"
TEXT_CAPABILITIES = frozenset({"text", "vision", "tools"})

Check = Callable[[EndpointInfo, RouteRequest, PolicyView], Reason | None]


def _catalog_only(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    return Reason.CATALOG_ONLY if e.status == "catalog_only" else None


def _status(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    return None if e.status in ("active", "degraded") else Reason.STATUS_NOT_SERVING


def _sovereignty(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    if p.allowed_residency and e.sovereignty_class not in p.allowed_residency:
        return Reason.SOVEREIGNTY_NOT_ALLOWED
    return None


def _region(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    if p.allowed_regions and e.region not in p.allowed_regions:
        return Reason.REGION_NOT_ALLOWED
    return None


def _capability(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    if r.operation == "embeddings":
        return None if "embedding" in e.capabilities else Reason.CANNOT_EMBED
    return None if e.capabilities & TEXT_CAPABILITIES else Reason.CANNOT_GENERATE_TEXT


def _provider_deny(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    return Reason.PROVIDER_DENIED if e.provider in p.provider_deny else None


def _provider_allow(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    if p.provider_allow and e.provider not in p.provider_allow:
        return Reason.PROVIDER_NOT_ALLOWED
    return None


def _model_deny(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    return Reason.MODEL_DENIED if e.model in p.model_deny else None


def _model_allow(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    if p.model_allow and e.model not in p.model_allow:
        return Reason.MODEL_NOT_ALLOWED
    return None


def _partner(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    return Reason.PARTNER_DISABLED if e.partner and not p.partners else None


def _vision(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    return Reason.NO_VISION if r.has_image and "vision" not in e.capabilities else None


def _context(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    if e.context_window < r.input_tokens + r.output_tokens:
        return Reason.CONTEXT_TOO_SMALL
    return None


def _price(e: EndpointInfo, r: RouteRequest, p: PolicyView) -> Reason | None:
    over_prompt = p.max_price_prompt is not None and e.price_input > p.max_price_prompt
    over_completion = p.max_price_completion is not None and e.price_output > p.max_price_completion
    return Reason.PRICE_ABOVE_CAP if over_prompt or over_completion else None


# SPEC R-DEC-2: the order is part of the contract; the first failing check is recorded.
FILTERS: tuple[Check, ...] = (
    _catalog_only, _status, _sovereignty, _region, _capability, _provider_deny,
    _provider_allow, _model_deny, _model_allow, _partner, _vision, _context, _price,
)  # fmt: skip

# Checks that do not depend on the request: what `/v1/models` lists (SPEC D-7).
STATIC_FILTERS: tuple[Check, ...] = (
    _catalog_only, _status, _sovereignty, _region, _provider_deny, _provider_allow,
    _model_deny, _model_allow, _partner,
)  # fmt: skip


def first_rejection(
    endpoint: EndpointInfo,
    request: RouteRequest,
    policy: PolicyView,
    checks: Sequence[Check] = FILTERS,
) -> Reason | None:
    for check in checks:
        reason = check(endpoint, request, policy)
        if reason is not None:
            return reason
    return None


def decide(
    endpoints: Sequence[EndpointInfo], request: RouteRequest, policy: PolicyView
) -> Decision:
    survivors: list[EndpointInfo] = []
    rejected: list[tuple[str, Reason]] = []
    for endpoint in endpoints:
        reason = first_rejection(endpoint, request, policy)
        if reason is None:
            survivors.append(endpoint)
        else:
            rejected.append((endpoint.id, reason))
    survivors.sort(key=lambda e: (e.price_input + e.price_output, e.id))
    return Decision(
        ordered=tuple(survivors),
        rejected=tuple(rejected),
        algorithm=ALGORITHM,
        reason=_sentence(request, survivors, rejected),
    )


def _sentence(
    request: RouteRequest, survivors: list[EndpointInfo], rejected: list[tuple[str, Reason]]
) -> str:
    if not survivors:
        return (
            f"No endpoint of {request.model} satisfies the workspace policy "
            f"({len(rejected)} excluded)."
        )
    first = survivors[0]
    return (
        f"Routed {request.model} to {first.provider} in {first.region} "
        f"({first.sovereignty_class}), the cheapest of {len(survivors)} eligible endpoints; "
        f"{len(rejected)} excluded by policy."
    )
