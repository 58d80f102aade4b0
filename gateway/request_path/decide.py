"""Step 4 of the request path: the `Plan` — the model chain (routing/engine/chain.py) and,
for each model the executor reaches, its decision (routing/engine/decide.py, or the auto
router's, routing/engine/auto/decide.py) reordered for the session's pins (affinity.py).
Pure over the caller, the resolved request and the request's `RoutingState`: explain runs
exactly this and stops. What it would change (round-robin turns, affinity counters) comes
back as effects."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gateway.errors import ApiError
from gateway.request_path.caller import Caller
from gateway.request_path.decision_record import decision_entry
from gateway.request_path.resolve import Resolved
from gateway.request_path.resolve.affinity import apply_affinity, count_target_pins, target_pins
from gateway.state.request_state import Effects, RoutingState
from gateway.state.snapshot import Snapshot
from routing.engine.auto.decide import decide_auto
from routing.engine.chain import Catalog, model_chain
from routing.engine.decide import decide
from routing.engine.types import Decision, Reason, RoutingRequest


class Plan:
    """One request's model chain, and a decision per model on demand: most requests stop
    at the first model, so the others are never decided. The decisions share one seeded
    random source, drawn in chain order, so explain and the request agree (SPEC D-21)."""

    def __init__(self, caller: Caller, resolved: Resolved, state: RoutingState) -> None:
        self.caller, self.resolved, self.state = caller, resolved, state
        self.rng = random.Random(resolved.seed)
        snap = caller.snapshot
        pins = target_pins(resolved.session, resolved.routing, snap.virtual, state)
        chain = model_chain(
            resolved.routing,
            Catalog(virtual=snap.virtual, endpoints=snap.endpoints),
            live=state.live,
            adaptive=state.adaptive,
            round_robin=state.round_robin,
            rng=self.rng,
            pins=pins,
        )
        self.models = chain.models
        self.effects = Effects(turns=list(chain.turns))
        count_target_pins(chain.pin_outcomes, self.effects)
        self._ahead: tuple[str | None, Decision, Effects] | None = None

    def decide_first(self) -> None:
        """Decide the chain's first model ahead — while the admission waits on Redis — and
        keep it for `decide`. Pure until its effects are applied, and the first draw from
        the random source either way, so a refused request lost nothing and an admitted
        one gets the decision it would have got."""
        if self.models and self._ahead is None:
            model = self.models[0]
            self._ahead = (model, *self.decide(model))

    def decide(self, model: str | None) -> tuple[Decision, Effects]:
        """The decision for one model of the chain, and the affinity counters it moves."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == model:
            return ahead[1], ahead[2]
        caller, routing, state = self.caller, self.resolved.routing, self.state
        snap, policy = caller.snapshot, caller.policy
        step = replace(routing, model=model)
        if routing.auto:
            decision = decide_auto(
                snap.all_endpoints,
                step,
                policy,
                caller.workspace.auto,
                snap.endpoints.keys(),
                state.live,
                self.rng,
                state.now,
            )
        else:
            endpoints = snap.endpoints.get(model or "", ())
            decision = decide(endpoints, step, policy, state.live, self.rng, state.now)
        effects = Effects()
        decision = apply_affinity(decision, model, self.resolved.session, state, effects)
        return decision, effects

    def entry(self, decision: Decision, model: str | None) -> dict[str, Any]:
        """The decision as the trace and explain record it."""
        return decision_entry(
            decision, self.resolved.routing, model, self.resolved.seed, self.caller.workspace.auto
        )


def no_endpoint(refused: Sequence[Decision], request: RoutingRequest, snap: Snapshot) -> ApiError:
    """The error of a chain whose models in `refused` (their decisions, in chain order, not
    empty) kept no endpoint. SPEC R-DEC-3 / R-BEY-6: the engine's sentence, then the fixed
    promise, and the machine-readable list of excluded candidates — of the last model
    refused for something other than size. Unless size is the only thing wrong everywhere
    (SPEC D-16): then OpenAI's 400 `context_length_exceeded`, which clients handle, naming
    the largest window of the whole chain (a fallback's may be larger than the first's)."""
    other = [d for d in refused if not _only_too_small(d)]
    if not other:
        rejected = {eid for decision in refused for eid, _r in decision.rejected}
        windows = [e.context_window for e in snap.all_endpoints if e.id in rejected]
        largest = max(windows, default=0)
        return ApiError(
            400,
            f"This request needs about {request.input_tokens} input tokens plus "
            f"{request.output_tokens or 0} output tokens, more than the largest context "
            f"window on offer for it ({largest} tokens). Shorten the messages or the "
            "requested output.",
            code="context_length_exceeded",
            param="messages",
        )
    decision = other[-1]
    return ApiError(
        409,
        f"{decision.reason} Residency is never relaxed silently.",
        code="no_endpoint_for_policy",
        extra={
            "excluded": [
                {"endpoint": eid, "reason": str(reason)} for eid, reason in decision.rejected
            ]
        },
    )


def _only_too_small(decision: Decision) -> bool:
    return bool(decision.rejected) and all(
        r is Reason.CONTEXT_TOO_SMALL for _e, r in decision.rejected
    )
