"""Narrowing a workspace policy by a request (SPEC R-DEC-4, D-4, D-6, D-13).

A request may only narrow: its `residency` intersects the policy's allowed sovereignty
classes, `provider.regions` intersects the policy's regions and `provider.max_price` can only
lower the policy's caps. The filter then reads one effective `PolicyView`, and the notes say in
words what the request changed, for the trace. Pure.
"""

from __future__ import annotations

from dataclasses import replace

from routing.engine.types import RESIDENCY_ORDER, PolicyView, RoutingRequest

# An allowed set that no endpoint can match. `PolicyView` reads an empty set as "any", so a
# request disjoint from its policy needs a value of its own: it must leave nothing, never
# everything (D-4). No endpoint has a sovereignty class or region spelled like this.
NOTHING = frozenset({"(none)"})

# Sovereignty classes nest, eu-owned ⊂ eu-hosted ⊂ any: the endpoint classes each requested
# residency admits.
CLASSES_FOR_RESIDENCY: dict[str, frozenset[str]] = {
    name: frozenset(RESIDENCY_ORDER[: index + 1]) for index, name in enumerate(RESIDENCY_ORDER)
}
EU_HOSTED_CLASSES = CLASSES_FOR_RESIDENCY["eu-hosted"]


def effective_policy(
    policy: PolicyView, request: RoutingRequest
) -> tuple[PolicyView, tuple[str, ...]]:
    """Return `policy` narrowed by `request`, and short sentences saying what narrowed.

    Never widens: every allowed set of the result is a subset of the policy's (reading empty
    as "any"), and each cap is at most the policy's. Idempotent: narrowing the result again
    by the same request returns it unchanged.
    """
    prefs = request.provider
    if (
        request.residency is None
        and not prefs.regions
        and prefs.max_price_prompt is None
        and prefs.max_price_completion is None
    ):
        return policy, ()  # the request narrows nothing: skip building an equal copy
    residency, residency_notes = _narrow_residency(policy.allowed_residency, request.residency)
    regions, region_notes = _narrow_regions(policy.allowed_regions, request.provider.regions)
    prompt, prompt_notes = _lower_cap(
        "prompt", policy.max_price_prompt, request.provider.max_price_prompt
    )
    completion, completion_notes = _lower_cap(
        "completion", policy.max_price_completion, request.provider.max_price_completion
    )
    narrowed = replace(
        policy,
        allowed_residency=residency,
        allowed_regions=regions,
        max_price_prompt=prompt,
        max_price_completion=completion,
    )
    return narrowed, residency_notes + region_notes + prompt_notes + completion_notes


def _narrow_residency(
    allowed: frozenset[str], requested: str | None
) -> tuple[frozenset[str], tuple[str, ...]]:
    if requested is None:
        return allowed, ()
    wanted = CLASSES_FOR_RESIDENCY.get(requested, NOTHING)
    if not allowed:
        # "any" in a policy admits every class; a request for "any" changes nothing.
        return (frozenset(), ()) if requested == "any" else (wanted, ())
    narrowed = wanted & allowed
    policy_words = _listed(allowed)
    if not narrowed:
        return NOTHING, (
            f"Requested residency {requested} is outside the policy's {policy_words}; "
            "no endpoint can qualify.",
        )
    if narrowed != wanted:
        return narrowed, (
            f"Requested residency {requested} is wider than the policy; "
            f"narrowed to {_listed(narrowed)}.",
        )
    return narrowed, ()


def _narrow_regions(
    allowed: frozenset[str], requested: frozenset[str]
) -> tuple[frozenset[str], tuple[str, ...]]:
    if not requested:
        return allowed, ()
    if not allowed:
        return requested, ()
    narrowed = requested & allowed
    if not narrowed:
        return NOTHING, (
            f"Requested regions {_listed(requested)} are outside the policy's "
            f"{_listed(allowed)}; no endpoint can qualify.",
        )
    if narrowed != requested:
        return narrowed, (f"Requested regions narrowed by the policy to {_listed(narrowed)}.",)
    return narrowed, ()


def _lower_cap(
    side: str, policy_cap: float | None, request_cap: float | None
) -> tuple[float | None, tuple[str, ...]]:
    if request_cap is None:
        return policy_cap, ()
    if policy_cap is None or request_cap <= policy_cap:
        return request_cap, ()
    return policy_cap, (
        f"Requested max {side} price {request_cap:g} is above the policy's {policy_cap:g} "
        "USD/1M; the policy's cap applies.",
    )


def residency_label(policy: PolicyView, request: RoutingRequest) -> str:
    """The residency a reason sentence names (R-DEC-4).

    The request's own when it named one and the policy did not narrow it; otherwise the
    effective policy's: `eu-hosted` when every allowed class is EU-hosted, else `any`
    (`none` when nothing is allowed). `policy` is the effective policy.
    """
    allowed = policy.allowed_residency
    if allowed == NOTHING:
        return "none"
    requested = request.residency
    if requested is not None and CLASSES_FOR_RESIDENCY.get(requested) == allowed:
        return requested
    return "eu-hosted" if allowed and allowed <= EU_HOSTED_CLASSES else "any"


def _listed(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))
