"""Session keeping (SPEC R-EXE-7, GM): a detected session stays on the endpoint that
served it while that endpoint is eligible and not in cooldown — even when a cheaper or
faster one appears — because switching costs the session its warm prompt cache. The pin
is released only when its endpoint is cooling or no longer passes the policy; the next
success re-pins the session to whatever the selector chose. Policy filters and cooldowns
always beat affinity: a pin only ever reorders the decision's own attempt list.

`keep_session` is pure; `SessionPins` is the per-process store, the caller passes the time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

from routing.types import Decision, LiveState

SESSION_TTL_S = 24 * 3600.0  # a session pin lives up to 24 h of activity (PH), sliding


def keep_session(
    decision: Decision, pinned: str | None, live: LiveState
) -> tuple[Decision, str | None]:
    """Put the session's pinned endpoint first when it may serve; returns the decision and
    the outcome for metrics: "honored", "released" (pin not usable), or None (no pin or
    nothing to choose between)."""
    if pinned is None:
        return decision, None
    ids = [e.id for e in decision.ordered]
    if pinned not in ids or pinned in live.cooling:
        released = f"Session pin on {pinned} released."
        return replace(decision, notes=(*decision.notes, released)), "released"
    if len(ids) == 1:
        return decision, None  # one eligible target: nothing for the selector to decide
    index = ids.index(pinned)
    ordered = (decision.ordered[index], *decision.ordered[:index], *decision.ordered[index + 1 :])
    by_id = {s.endpoint_id: s for s in decision.scored}
    scored = tuple(by_id[e.id] for e in ordered if e.id in by_id)
    note = f"Session kept on {pinned} (affinity)."
    return replace(
        decision, ordered=ordered, scored=scored, notes=(*decision.notes, note)
    ), "honored"


class SessionPins:
    """Session key → endpoint id, sliding TTL, bounded (least recently used evicted)."""

    def __init__(self, ttl_s: float = SESSION_TTL_S, max_entries: int = 100_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._pins: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def get(self, key: str, now: float) -> str | None:
        entry = self._pins.get(key)
        if entry is None:
            return None
        endpoint, expires = entry
        if now >= expires:
            del self._pins[key]
            return None
        return endpoint

    def pin(self, key: str, endpoint: str, now: float) -> None:
        self._pins[key] = (endpoint, now + self.ttl_s)
        self._pins.move_to_end(key)
        while len(self._pins) > self.max_entries:
            self._pins.popitem(last=False)
