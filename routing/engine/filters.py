"""The hard filter (SPEC R-DEC-2): one check per step, run in the contract's order.

Each check reads one endpoint, the request and the *effective* policy (routing/engine/policy.py)
and returns the literal `Reason` it fails, or None. The first failing check is the one
recorded: it is the reason that explains the route. Request-level provider controls
(`provider.ignore`, `provider.only`, `allow_fallbacks: false`) sit beside the policy lists
they resemble. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from routing.engine.policy import effective_policy
from routing.engine.types import EndpointInfo, PolicyView, Reason, RoutingRequest

Check = Callable[[EndpointInfo, RoutingRequest, PolicyView], Reason | None]

# What makes an endpoint able to answer chat/responses (the catalog has no plain "chat").
TEXT_CAPABILITIES = frozenset({"text", "vision", "tools"})
SERVING_STATUSES = frozenset({"active", "degraded"})


def catalog_only(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return Reason.CATALOG_ONLY if e.status == "catalog_only" else None


def status_serving(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return None if e.status in SERVING_STATUSES else Reason.STATUS_NOT_SERVING


def sovereignty(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    if p.allowed_residency and e.sovereignty_class not in p.allowed_residency:
        return Reason.SOVEREIGNTY_NOT_ALLOWED
    return None


def data_class(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    """D-22: an endpoint that lists the classes it is cleared for serves only those."""
    if e.data_classes and r.data_class not in e.data_classes:
        return Reason.DATA_CLASS_NOT_CLEARED
    return None


def region(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    if p.allowed_regions and e.region not in p.allowed_regions:
        return Reason.REGION_NOT_ALLOWED
    return None


def capability(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    if r.operation == "embeddings":
        return None if "embedding" in e.capabilities else Reason.CANNOT_EMBED
    # isdisjoint, not `&`: the same answer without building a set, on every endpoint.
    if e.capabilities.isdisjoint(TEXT_CAPABILITIES):
        return Reason.CANNOT_GENERATE_TEXT
    return None


def provider_deny(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return Reason.PROVIDER_DENIED if e.provider in p.provider_deny else None


def provider_ignore(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return Reason.PROVIDER_IGNORED if e.provider in r.provider.ignore else None


def provider_allow(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    if p.provider_allow and e.provider not in p.provider_allow:
        return Reason.PROVIDER_NOT_ALLOWED
    return None


def provider_only(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    """`provider.only`, and `provider:model` (R-MOD-4), which acts as only=[that provider]."""
    only = r.provider.only
    if only and e.provider not in only:
        return Reason.PROVIDER_NOT_IN_ONLY
    if r.pinned_provider is not None and e.provider != r.pinned_provider:
        return Reason.PROVIDER_NOT_IN_ONLY
    return None


def provider_order(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    """`allow_fallbacks: false` keeps only the providers in `provider.order`; with no order
    listed there is nothing to restrict to, so it restricts nothing."""
    prefs = r.provider
    if not prefs.allow_fallbacks and prefs.order and e.provider not in prefs.order:
        return Reason.PROVIDER_NOT_IN_ORDER
    return None


def model_deny(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return Reason.MODEL_DENIED if e.model in p.model_deny else None


def model_allow(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    if p.model_allow and e.model not in p.model_allow:
        return Reason.MODEL_NOT_ALLOWED
    return None


def partner(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return Reason.PARTNER_DISABLED if e.partner and not p.partners else None


def vision(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    return Reason.NO_VISION if r.has_image and "vision" not in e.capabilities else None


def context(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    if e.context_window < r.input_tokens + r.output_tokens:
        return Reason.CONTEXT_TOO_SMALL
    return None


def price_cap(e: EndpointInfo, r: RoutingRequest, p: PolicyView) -> Reason | None:
    """Either price over its cap fails (D-6); the request's caps are already in `p`."""
    cap = p.max_price_prompt
    if cap is not None and e.price_input > cap:
        return Reason.PRICE_ABOVE_CAP
    cap = p.max_price_completion
    if cap is not None and e.price_output > cap:
        return Reason.PRICE_ABOVE_CAP
    return None


# SPEC R-DEC-2: the order is part of the contract; the first failing check is recorded.
FILTERS: tuple[Check, ...] = (
    catalog_only,
    status_serving,
    sovereignty,
    data_class,
    region,
    capability,
    provider_deny,
    provider_ignore,
    provider_allow,
    provider_only,
    provider_order,
    model_deny,
    model_allow,
    partner,
    vision,
    context,
    price_cap,
)

# The steps that hold for a key whatever it sends: what `/v1/models` lists (SPEC D-7).
REQUEST_INDEPENDENT: tuple[Check, ...] = (
    catalog_only,
    status_serving,
    sovereignty,
    region,
    provider_deny,
    provider_allow,
    model_deny,
    model_allow,
    partner,
)


# When a step can fail at all; a step not listed here can always fail. Skipping the others
# changes no outcome, and the filter runs once per endpoint on every request.
_CAN_FAIL: dict[Check, Callable[[RoutingRequest, PolicyView], bool]] = {
    sovereignty: lambda r, p: bool(p.allowed_residency),
    data_class: lambda r, p: r.data_class is not None,
    region: lambda r, p: bool(p.allowed_regions),
    provider_deny: lambda r, p: bool(p.provider_deny),
    provider_ignore: lambda r, p: bool(r.provider.ignore),
    provider_allow: lambda r, p: bool(p.provider_allow),
    provider_only: lambda r, p: bool(r.provider.only) or r.pinned_provider is not None,
    provider_order: lambda r, p: not r.provider.allow_fallbacks and bool(r.provider.order),
    model_deny: lambda r, p: bool(p.model_deny),
    model_allow: lambda r, p: bool(p.model_allow),
    partner: lambda r, p: not p.partners,
    vision: lambda r, p: r.has_image,
    price_cap: lambda r, p: p.max_price_prompt is not None or p.max_price_completion is not None,
}


def active_checks(
    request: RoutingRequest, effective: PolicyView, checks: Sequence[Check] = FILTERS
) -> tuple[Check, ...]:
    """`checks`, in order, without the ones that cannot fail for this request and policy."""
    return tuple(c for c in checks if c not in _CAN_FAIL or _CAN_FAIL[c](request, effective))


def first_rejection(
    endpoint: EndpointInfo,
    request: RoutingRequest,
    policy: PolicyView,
    checks: Sequence[Check] = FILTERS,
) -> Reason | None:
    """The first of `checks` that `endpoint` fails, or None when it passes them all.

    `policy` may be the workspace's own or an already effective one: it is narrowed by
    `request` here, and narrowing is idempotent.
    """
    narrowed, _notes = effective_policy(policy, request)
    return first_failing(endpoint, request, narrowed, checks)


def first_failing(
    endpoint: EndpointInfo,
    request: RoutingRequest,
    effective: PolicyView,
    checks: Sequence[Check] = FILTERS,
) -> Reason | None:
    """Like `first_rejection`, for a policy the caller has already narrowed (the hot path)."""
    for check in checks:
        reason = check(endpoint, request, effective)
        if reason is not None:
            return reason
    return None
