"""Session keeping (SPEC R-EXE-7, GM): a detected session stays on the endpoint that
served it while that endpoint is eligible and not in cooldown — even when a cheaper or
faster one appears — because switching costs the session its warm prompt cache. The pin
is released only when its endpoint is cooling or no longer passes the policy; the next
success re-pins the session to whatever the selector chose. Policy filters and cooldowns
always beat affinity: a pin only ever reorders the decision's own attempt list. And the
client's own order beats it too: a request with an explicit `provider.order` neither follows
nor sets a pin (D-15, `affinity_skipped`). A pin set while a dynamic route chose the model
belongs to the route's model node as it was defined (`routes.node_pin_scope`, which the
gateway adds to the pin's key): once a deploy or rollback sends the session through a node
defined otherwise — a canary rolled back, say — the session starts afresh where the
deployed version chooses (R-BEY-4).

`keep_session` and `affinity_skipped` are pure; `SessionPins` is the per-process store, the
caller passes the time (wall clock, epoch seconds: with several replicas pins are shared with
their absolute expiry, R-BEY-9, through the store's `listener` and `apply_remote`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from routing.engine.decide import reason_for
from routing.engine.types import Decision, EndpointInfo, LiveState, RoutingRequest

SESSION_TTL_S = 24 * 3600.0  # a session pin lives up to 24 h of activity (PH), sliding
# A pin that only slid is told again once the expiry other replicas hold is off by more than
# this: a sliding TTL would otherwise mean one Redis write per request. Other replicas may
# so forget an idle pin up to this much earlier than the node that served it last.
REPUBLISH_AFTER_S = 60.0

# Told when a pin is set or moves, or its expiry drifts: (key, endpoint id, expires_at).
PinListener = Callable[[str, str, float], None]


def affinity_skipped(request: RoutingRequest) -> str | None:
    """Why no affinity applies to this request, as the note for its decision record; None
    when it does. An explicit `provider.order` is the client choosing the attempt order
    itself, so session keeping and prompt-cache pins (virtual-target pins and the warm boost
    too) are off for the request — OpenRouter's rule: an explicit order disables sticky
    routing. Off both ways: a pin written after such a request would carry the client's
    one-off order into the session's later requests, which never asked for it."""
    order = request.provider.order
    if not order:
        return None
    return (
        f"Affinity skipped: the request sets provider.order ({', '.join(order)}), which takes "
        "priority over session keeping and prompt-cache pins; no pin is followed or set."
    )


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
    return reordered(decision, ordered, f"Session kept on {pinned} (affinity)."), "honored"


def reordered(decision: Decision, ordered: tuple[EndpointInfo, ...], note: str) -> Decision:
    """The decision with its attempt list (and scores) in a new order, a note why, and its
    sentence told for the new first endpoint."""
    by_id = {s.endpoint_id: s for s in decision.scored}
    scored = tuple(by_id[e.id] for e in ordered if e.id in by_id)
    moved = replace(decision, ordered=ordered, scored=scored, notes=(*decision.notes, note))
    return replace(moved, reason=reason_for(moved, ordered[0])) if ordered else moved


class SessionPins:
    """Session key → endpoint id, sliding TTL, bounded (least recently used evicted).

    Each entry also remembers the expiry last told to `listener` (what other replicas
    hold), so that sliding a pin is told only every `REPUBLISH_AFTER_S`; a new pin, a pin
    that moves to another endpoint and a revived one are told at once."""

    def __init__(
        self,
        ttl_s: float = SESSION_TTL_S,
        max_entries: int = 100_000,
        republish_after_s: float = REPUBLISH_AFTER_S,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.republish_after_s = republish_after_s
        self.listener: PinListener | None = None
        # key -> (endpoint id, expires_at, expires_at as last told to the listener)
        self._pins: OrderedDict[str, tuple[str, float, float]] = OrderedDict()

    def __len__(self) -> int:
        """Pins held, expired ones not yet purged included (an empty store needs no key)."""
        return len(self._pins)

    def get(self, key: str, now: float) -> str | None:
        entry = self._pins.get(key)
        if entry is None:
            return None
        endpoint, expires, _told = entry
        if now >= expires:
            del self._pins[key]
            return None
        return endpoint

    def pin(self, key: str, endpoint: str, now: float, ttl_s: float | None = None) -> None:
        """Pin (or slide) the key to `endpoint` until `now + ttl_s` (default: the store's)."""
        expires = now + (self.ttl_s if ttl_s is None else ttl_s)
        entry = self._pins.get(key)
        if entry is not None and entry[0] == endpoint and now < entry[1]:
            tell = abs(expires - entry[2]) > self.republish_after_s  # entry[2]: what others hold
        else:
            tell = True  # new, moved or lapsed
        self._store(key, endpoint, expires, expires if tell or entry is None else entry[2])
        if tell and self.listener is not None:
            self.listener(key, endpoint, expires)

    def apply_remote(self, key: str, endpoint: str, expires_at: float) -> None:
        """A pin another replica set or slid: the last one told wins. Not told again."""
        self._store(key, endpoint, expires_at, expires_at)

    def _store(self, key: str, endpoint: str, expires: float, told: float) -> None:
        self._pins[key] = (endpoint, expires, told)
        self._pins.move_to_end(key)
        while len(self._pins) > self.max_entries:
            self._pins.popitem(last=False)
