"""The routing decision (SPEC §3): narrow the policy, filter, score, order, explain.

`decide` is a pure function of its arguments — the candidate endpoints, the resolved request,
the workspace policy, the live metrics, a seeded `random.Random` and the time — so the same
inputs give the same `Decision`, and a trace can be replayed. It reads no database, clock,
global randomness or network. The parts live beside it: routing/engine/policy.py (narrowing),
routing/engine/filters.py (the ordered hard filter), routing/engine/scoring.py (modes for a
pinned model),
routing/engine/fit.py (auto scoring).

Order of the attempt list: the mode's (or auto's) order; then the providers listed in
`provider.order` first, in that order; then endpoints failing a soft filter
(`preferred_min_throughput`, `preferred_max_latency`), then unhealthy ones and finally
endpoints in cooldown move to the end, each group keeping its relative order. A cooling
endpoint is so skipped while any other survivor can still answer (R-EXE-3) and tried when
they have all failed — better to try than to refuse; the decision's notes name them.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from routing.engine.filters import REQUEST_INDEPENDENT, active_checks, first_rejection
from routing.engine.fit import OBJECTIVES, score_auto
from routing.engine.policy import effective_policy, residency_label
from routing.engine.scoring import make_scored, order_by_mode, stats_of
from routing.engine.types import (
    Decision,
    EndpointInfo,
    EndpointStats,
    LiveState,
    PolicyView,
    ProviderPrefs,
    Reason,
    RoutingRequest,
    Scored,
)

__all__ = ["ALGORITHM", "REQUEST_INDEPENDENT", "decide", "first_rejection"]

ALGORITHM = "switchyard-route-v1"
UNHEALTHY = "unhealthy"
COOLDOWN = "cooldown"
CLASS_WORDS = {"eu-owned": "EU-owned", "eu-hosted": "EU-hosted", "any": "not EU-restricted"}
_VOWELS = ("a", "e", "i", "o", "u")
_OBJECTIVE_NOTES = {
    "cost": "Workspace objective cost doubles the price weight.",
    "latency": "Workspace objective latency doubles the latency weight.",
    "quality": "Workspace objective quality doubles the task and language weights.",
}


def decide(
    endpoints: Sequence[EndpointInfo],
    request: RoutingRequest,
    policy: PolicyView,
    live: LiveState,
    rng: random.Random,
    now: float,
    *,
    objective: str = "balanced",
) -> Decision:
    """Decide which endpoints to try, in order, and why.

    `endpoints`: one model's endpoints, or every catalog model's for `request.auto`; ids are
    unique. `policy`: the workspace's own; the request narrows it here. `rng`: the only
    source of randomness (the balanced draw). `now`: seconds since the epoch; no current
    check depends on it (health arrives precomputed in `live.unhealthy`). `objective`: the
    workspace's auto objective (D-2), one of OBJECTIVES. Nothing surviving is an empty
    `ordered` with every rejection (the gateway answers 409, R-DEC-3).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    effective, notes = effective_policy(policy, request)
    survivors, rejected = _filter(endpoints, request, effective)
    if request.auto:
        ranked = score_auto(survivors, request, live, objective)
        notes += (_OBJECTIVE_NOTES[objective],) if objective in _OBJECTIVE_NOTES else ()
    else:
        ranked = order_by_mode(survivors, request, live, rng)
    by_id = {e.id: e for e in survivors}
    ranked = _demote(_provider_order(ranked, by_id, request.provider.order), request, live)
    ranked, last = _cooling_last(ranked, live)
    if last:
        notes += (f"In cooldown, tried after the others: {', '.join(last)}.",)
    ordered = tuple([by_id[s.endpoint_id] for s in ranked])
    lead, tail = _sentence_parts(request, effective, rejected)
    return Decision(
        ordered=ordered,
        rejected=rejected,
        algorithm=ALGORITHM,
        reason=_sentence(request, effective, ordered, rejected),
        mode=request.mode,
        mode_source=request.mode_source,
        scored=tuple(ranked),
        notes=notes,
        reason_lead=lead if ordered else "",
        reason_tail=tail if ordered else "",
    )


def reason_for(decision: Decision, endpoint: EndpointInfo) -> str:
    """The decision's sentence told for `endpoint`, the one that served (R-API-5): a pin
    or a failover may have put another endpoint first."""
    if not decision.reason_lead:
        return decision.reason
    words = CLASS_WORDS.get(endpoint.sovereignty_class, endpoint.sovereignty_class)
    return (
        f"{decision.reason_lead} to {endpoint.model} in {endpoint.region} ({words}) "
        f"at {endpoint.provider}{decision.reason_tail}"
    )


def _filter(
    endpoints: Sequence[EndpointInfo], request: RoutingRequest, effective: PolicyView
) -> tuple[list[EndpointInfo], tuple[tuple[str, Reason], ...]]:
    """`first_failing` for every endpoint, its loop written out here: this is the hottest
    loop of a decision (every endpoint × every check that can fail)."""
    checks = active_checks(request, effective)
    survivors: list[EndpointInfo] = []
    rejected: list[tuple[str, Reason]] = []
    for endpoint in endpoints:
        for check in checks:
            reason = check(endpoint, request, effective)
            if reason is not None:
                rejected.append((endpoint.id, reason))
                break
        else:
            survivors.append(endpoint)
    return survivors, tuple(rejected)


def _provider_order(
    ranked: list[Scored], by_id: dict[str, EndpointInfo], order: Sequence[str]
) -> list[Scored]:
    """Providers listed in `provider.order` first, in the listed order (stable)."""
    if not order:
        return ranked
    position = {provider: index for index, provider in enumerate(dict.fromkeys(order))}
    last = len(order)
    return sorted(ranked, key=lambda s: position.get(by_id[s.endpoint_id].provider, last))


def _demote(ranked: list[Scored], request: RoutingRequest, live: LiveState) -> list[Scored]:
    """Soft-filter failures, then unhealthy endpoints, to the end; each keeps its order."""
    prefs = request.provider
    has_soft = prefs.preferred_min_throughput is not None or prefs.preferred_max_latency is not None
    if not has_soft and not live.unhealthy:
        return ranked  # nothing can move
    kept: list[Scored] = []
    soft: list[Scored] = []
    unhealthy: list[Scored] = []
    for scored in ranked:
        if scored.endpoint_id in live.unhealthy:
            unhealthy.append(_demoted(scored, UNHEALTHY))
            continue
        why = soft_demotion(stats_of(live, scored.endpoint_id), prefs) if has_soft else None
        if why is None:
            kept.append(scored)
        else:
            soft.append(_demoted(scored, why))
    return kept + soft + unhealthy


def _cooling_last(ranked: list[Scored], live: LiveState) -> tuple[list[Scored], tuple[str, ...]]:
    """Endpoints in cooldown after every other survivor, marked, in their order (R-EXE-3),
    and their ids when some other survivor goes before them (for the note)."""
    if not live.cooling:
        return ranked, ()
    warm = [s for s in ranked if s.endpoint_id not in live.cooling]
    cooling = [_demoted(s, COOLDOWN) for s in ranked if s.endpoint_id in live.cooling]
    return warm + cooling, tuple(s.endpoint_id for s in cooling) if warm else ()


def _demoted(scored: Scored, why: str) -> Scored:
    """`replace(scored, demoted=why)`, built sooner (see routing.engine.scoring.make_scored)."""
    return make_scored(scored.endpoint_id, scored.score, scored.factors, scored.multipliers, why)


def soft_demotion(stats: EndpointStats, prefs: ProviderPrefs) -> str | None:
    """Why an endpoint misses the request's soft preferences, or None. Missing stats pass."""
    minimum = prefs.preferred_min_throughput
    tps = stats.throughput_tps
    if minimum is not None and tps is not None and tps < minimum:
        return "below_min_throughput"
    target = prefs.preferred_max_latency
    if target is None:
        return None
    for name, limit, actual in (
        ("p50", target.p50, stats.latency_p50_ms),
        ("p90", target.p90, stats.latency_p90_ms),
        ("p99", target.p99, stats.latency_p99_ms),
    ):
        if limit is not None and actual is not None and actual > limit:
            return f"above_max_latency_{name}"
    return None


def _sentence_parts(
    request: RoutingRequest, effective: PolicyView, rejected: tuple[tuple[str, Reason], ...]
) -> tuple[str, str]:
    """The routed sentence before and after its endpoint (see `reason_for`)."""
    excluded = len(rejected)
    counted = f"{excluded} endpoint{'' if excluded == 1 else 's'} excluded"
    partners = f"partner endpoints {'allowed' if effective.partners else 'not allowed'}"
    task = f"{'an' if request.task[:1] in _VOWELS else 'a'} {request.task} task"
    lead = (
        f"{'Auto-routed' if request.auto else 'Routed'} {task} with residency "
        f"{residency_label(effective, request)}"
    )
    return lead, f"; {counted}, {partners}."


def _sentence(
    request: RoutingRequest,
    effective: PolicyView,
    ordered: tuple[EndpointInfo, ...],
    rejected: tuple[tuple[str, Reason], ...],
) -> str:
    """One sentence for people (R-API-5); with nothing left, one about the residency."""
    if ordered:
        lead, tail = _sentence_parts(request, effective, rejected)
        first = ordered[0]
        words = CLASS_WORDS.get(first.sovereignty_class, first.sovereignty_class)
        return f"{lead} to {first.model} in {first.region} ({words}) at {first.provider}{tail}"
    excluded = len(rejected)
    counted = f"{excluded} endpoint{'' if excluded == 1 else 's'} excluded"
    partners = f"partner endpoints {'allowed' if effective.partners else 'not allowed'}"
    task = f"{'an' if request.task[:1] in _VOWELS else 'a'} {request.task} task"
    target = "any model" if request.auto else (request.model or request.requested_model)
    residency = request.residency or residency_label(effective, request)
    if rejected:
        reasons = Counter(reason for _id, reason in rejected)
        counted += f" (most often {reasons.most_common(1)[0][0]})"
    return (
        f"No endpoint of {target} is allowed for {task} with residency {residency} "
        f"under this workspace's policy; {counted}, {partners}."
    )
