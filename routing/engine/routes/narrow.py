"""A model node's `provider` object applied to the request's (SPEC R-ROUTE-1, R-BEY-5): the
route only ever narrows. Whatever provider, region or price the request excludes stays
excluded, and so does whatever the route excludes; the request keeps its own preferences
(order, sort, latency and throughput targets) where it set them. Pure.
"""

from __future__ import annotations

from typing import Any, TypeVar

from routing.engine.policy import NOTHING
from routing.engine.types import ProviderPrefs

# Request-level flags of R-BEY-10 that restrict when true: either side's true holds.
_RESTRICTING_FLAGS = ("require_parameters", "zdr", "enforce_distillable_text")
T = TypeVar("T")


def narrow_provider(request: ProviderPrefs, route: ProviderPrefs | None) -> ProviderPrefs:
    """The request's provider object narrowed by the route's.

    `only` and `regions` intersect when both are set, else whichever is set; an empty
    intersection becomes NOTHING (an empty set reads as "any", which would widen). `ignore`
    is the union; each price cap the lower; `allow_fallbacks` holds only when both allow.
    `order` and `sort` are the request's if set, else the route's. A route's
    `allow_fallbacks: false` with an `order` restricts to that order's providers; when the
    request's own order replaces it, that restriction is folded into `only`, so taking the
    request's order can never reopen a provider the route closed.
    """
    if route is None:
        return request
    order = request.order or route.order
    route_only = route.only
    if not route.allow_fallbacks and route.order and order != route.order:
        route_only = _meet(route_only, frozenset(route.order))
    return ProviderPrefs(
        order=order,
        allow_fallbacks=request.allow_fallbacks and route.allow_fallbacks,
        only=_meet(request.only, route_only),
        ignore=request.ignore | route.ignore,
        sort=request.sort if request.sort is not None else route.sort,
        max_price_prompt=_lower(request.max_price_prompt, route.max_price_prompt),
        max_price_completion=_lower(request.max_price_completion, route.max_price_completion),
        preferred_min_throughput=_first(
            request.preferred_min_throughput, route.preferred_min_throughput
        ),
        preferred_max_latency=_first(request.preferred_max_latency, route.preferred_max_latency),
        regions=_meet(request.regions, route.regions),
        extra=_merge_extra(request.extra, route.extra),
    )


def _meet(first: frozenset[str], second: frozenset[str]) -> frozenset[str]:
    if not first or not second:
        return first or second
    return (first & second) or NOTHING


def _lower(first: float | None, second: float | None) -> float | None:
    if first is None or second is None:
        return second if first is None else first
    return min(first, second)


def _first(preferred: T | None, other: T | None) -> T | None:
    return preferred if preferred is not None else other


def _merge_extra(request: dict[str, Any], route: dict[str, Any]) -> dict[str, Any]:
    """The request's accepted-verbatim fields over the route's, except where one side's
    value is the narrower: a true restricting flag, `data_collection: deny`, and the
    intersection of two `quantizations` lists."""
    merged = {**route, **request}
    for flag in _RESTRICTING_FLAGS:
        if request.get(flag) or route.get(flag):
            merged[flag] = True
    if "deny" in (request.get("data_collection"), route.get("data_collection")):
        merged["data_collection"] = "deny"
    if request.get("quantizations") and route.get("quantizations"):
        common = [q for q in request["quantizations"] if q in route["quantizations"]]
        merged["quantizations"] = common or sorted(NOTHING)
    return merged
