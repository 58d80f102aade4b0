"""Smart tiers in the resolve step (SPEC §5): when the requested model is one of the
workspace's tiered aliases, classify the request (routing/engine/tiers/choose.py), apply
the session's upward-only pin, and rewrite the model to the tier's target before the model
field is resolved. The verdict goes to response headers, the trace and Prometheus; the pin
writes and counters are returned as effects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway import metrics
from gateway.errors import invalid
from gateway.request_path.caller import Caller
from gateway.state.request_state import Effects, PinView, RoutingState, TierPin
from routing.engine.affinity.sessions import detect_session
from routing.engine.tiers.choose import Verdict, choose_tier, verdict_headers
from routing.engine.tiers.pins import HARD, pin_key


@dataclass(frozen=True, slots=True)
class TierOutcome:
    alias: str
    target: str
    verdict: Verdict

    def headers(self) -> dict[str, str]:
        return {**verdict_headers(self.verdict), "X-Switchyard-Tier-Target": self.target}

    def as_json(self) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "alias": self.alias,
            "target": self.target,
            "tier": verdict.tier,
            "score": verdict.score,
            "source": verdict.source,
            "signals": [
                {"name": s.name, "points": s.points, "detail": s.detail} for s in verdict.signals
            ],
        }


class _PinWrites:
    """The tier pins as `choose_tier` sees them: reads from the request's state, writes
    kept as effects."""

    def __init__(self, view: PinView, effects: Effects) -> None:
        self.view, self.effects = view, effects

    def get(self, key: str, now: float) -> str | None:
        return self.view.get(key, now)

    def pin_hard(self, key: str, now: float, ttl_s: float) -> None:
        self.effects.tier_pins.append(TierPin("pin_hard", key, now, ttl_s))

    def touch(self, key: str, now: float, ttl_s: float) -> None:
        self.effects.tier_pins.append(TierPin("touch", key, now, ttl_s))


def apply_tiers(
    caller: Caller,
    headers: Mapping[str, str],
    body: dict[str, Any],
    state: RoutingState,
    effects: Effects,
) -> tuple[dict[str, Any], TierOutcome | None]:
    """The body to route (model rewritten when a tiered alias was asked for)."""
    config = caller.workspace.tiers
    requested = body.get("model")
    if config is None or not isinstance(requested, str) or requested not in config.aliases:
        return body, None
    session_key, _source = detect_session(
        headers,
        body,
        workspace_id=caller.workspace.id,
        api_key_id=caller.key.pk,
        model=requested,
    )
    pins = _PinWrites(state.tier_pins, effects)
    key = pin_key(requested, session_key) if session_key is not None else None
    was_hard = key is not None and pins.get(key, state.now) == HARD
    written = len(effects.tier_pins)
    try:
        verdict, target = choose_tier(
            config.aliases[requested], body, headers, config, pins, session_key, state.now
        )
    except ValueError as error:
        header = str(error).split(" ", 1)[0]
        raise invalid(str(error), param=header) from None
    # A hard verdict pins the session; counted as an escalation when it was not hard yet.
    pinned_now = any(p.action == "pin_hard" for p in effects.tier_pins[written:])
    _count(effects, requested, verdict, escalated=pinned_now and not was_hard)
    return {**body, "model": target}, TierOutcome(requested, target, verdict)


def _count(effects: Effects, alias: str, verdict: Verdict, *, escalated: bool) -> None:
    effects.count(metrics.TIER_REQUESTS, alias, verdict.tier, verdict.source)
    if verdict.source in ("classifier", "pinned"):
        effects.sample(metrics.TIER_SCORE, alias, value=verdict.score)
    if escalated:
        effects.count(metrics.TIER_ESCALATIONS, alias)
