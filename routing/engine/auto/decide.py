"""The auto router's decision (SPEC R-AUTO-1, R-AUTO-3): `decide` over every catalog
endpoint, under the workspace policy narrowed by the auto settings (spend caps, model
patterns) and with the settings' objective; with `fallback: false` only the top-ranked
model's endpoints stay in the attempt list. Pure."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import replace

from routing.engine.auto.settings import AutoSettings, first_model_only, narrow_for_auto
from routing.engine.decide import decide
from routing.engine.types import Decision, EndpointInfo, LiveState, PolicyView, RoutingRequest

FALLBACK_OFF_NOTE = "Auto-router fallback is off: only the top model is tried."


def decide_auto(
    endpoints: Sequence[EndpointInfo],
    request: RoutingRequest,
    policy: PolicyView,
    auto: AutoSettings,
    catalog_models: Iterable[str],
    live: LiveState,
    rng: random.Random,
    now: float,
) -> Decision:
    narrowed = narrow_for_auto(policy, auto, catalog_models)
    decision = decide(endpoints, request, narrowed, live, rng, now, objective=auto.objective)
    if auto.fallback:
        return decision
    ordered = first_model_only(decision.ordered)
    kept = {e.id for e in ordered}
    return replace(
        decision,
        ordered=ordered,
        scored=tuple(s for s in decision.scored if s.endpoint_id in kept),
        notes=(*decision.notes, FALLBACK_OFF_NOTE),
    )
