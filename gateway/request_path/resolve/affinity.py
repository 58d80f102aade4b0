"""Affinity on the request path (SPEC R-EXE-6, R-EXE-7): which session a request belongs
to, and the three things that keep a session where its caches are warm —

- session keeping: the endpoint that last served the session goes first while it may serve
  (routing/engine/affinity/keeping.py), 24 h sliding;
- cache-aware pinning: after a provider reports a real prompt-cache read, its endpoints go
  first for 15 min, or 24 h for a session the client named
  (routing/engine/affinity/prompt_cache.py);
- the warm-cache boost: in an adaptive virtual model, the target that last served the
  session weighs ×8 for 10 min (routing/engine/adaptive.py); session keeping also keeps a
  session on its virtual model's target (routing/engine/virtual.py `arrange_targets`).

Policy filters and cooldowns always win: each only reorders a decision's own attempt list
or reweights targets that are not cooling. A request a dynamic route sent to a model node
keeps its pins under that node's definition (`node_pin_scope`), so no pin outlives a
deploy or rollback that sends its session elsewhere (R-BEY-4). An explicit
`provider.order` wins too (D-15): such a request neither reads nor writes any pin, and each
of its decisions says so. The pure rules live in routing/engine/affinity/; this module reads
the pins from the request's `RoutingState` and returns every pin and counter it would write
as `Effects`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gateway import metrics
from gateway.request_path.caller import Caller
from gateway.state.request_state import Effects, Pin, RoutingState
from gateway.upstream.target import Target
from routing.engine.adaptive import WARM_CACHE_TTL_S
from routing.engine.affinity.keeping import affinity_skipped, keep_session
from routing.engine.affinity.prompt_cache import (
    cache_aware,
    cached_tokens,
    keep_cache_pin,
    pin_ttl_s,
)
from routing.engine.affinity.sessions import detect_session
from routing.engine.chain import TargetPins
from routing.engine.routes import ModelNode, node_pin_scope
from routing.engine.types import Decision, LiveState, RoutingRequest


class Session:
    """A request's session, detected lazily: hashing the opening messages is paid only when
    a pin store with pins in it is consulted, or a pin is written."""

    __slots__ = ("_detect", "_key", "_named", "_node", "keep", "cache_aware", "skipped")

    def __init__(
        self,
        detect: Callable[[], tuple[str, str]],
        *,
        keep: bool,
        cache_aware: bool,
        skipped: str | None = None,
        node: ModelNode | None = None,
    ) -> None:
        self._detect = detect
        self._node = node  # the route's model node that chose the model, if one did
        self._key: str | None = None
        self._named = False
        self.keep = keep  # session keeping and virtual-target pins are on for this request
        self.cache_aware = cache_aware  # cache-aware pinning and the warm boost are on
        self.skipped = skipped  # why this request uses no pin at all (its decisions' note)

    @property
    def key(self) -> str:
        """Scoped to workspace and API key (routing/engine/affinity/sessions.py), and to
        the route's model node when one chose the model."""
        if self._key is None:
            key, source = self._detect()
            self._named = source != "hash"
            self._key = key if self._node is None else f"{key}@{node_pin_scope(self._node)}"
        return self._key

    @property
    def named(self) -> bool:
        """The client sent the id; False for the hash of the opening messages."""
        _ = self.key
        return self._named


def session_of(
    caller: Caller,
    headers: Mapping[str, str],
    body: dict[str, Any],
    routing: RoutingRequest,
    state: RoutingState,
    node: ModelNode | None = None,
) -> Session | None:
    """The request's session, or None when no affinity is on for it. When affinity is on but
    the request itself rules it out (an explicit `provider.order`, D-15), a session that
    reads and writes no pin and only carries the note saying why. `node`: the dynamic
    route's model node that chose the model (its pins are its own)."""
    keep = state.settings.session_affinity and routing.session_affinity
    cache = cache_aware(routing.provider.extra)
    if not (keep or cache):
        return None
    skipped = affinity_skipped(routing)
    if skipped is not None:
        keep = cache = False
    return Session(
        lambda: detect_session(
            headers,
            body,
            workspace_id=caller.workspace.id,
            api_key_id=caller.key.pk,
            model=routing.requested_model,
        ),
        keep=keep,
        cache_aware=cache,
        skipped=skipped,
        node=node,
    )


def _pin_key(session: Session, model: str | None) -> str:
    return f"{session.key}|{model or 'auto'}"


def apply_affinity(
    decision: Decision,
    model: str | None,
    session: Session | None,
    state: RoutingState,
    effects: Effects,
) -> Decision:
    """Reorder one model's decision for the session: the prompt-cache pin, then the session
    pin (the more specific, so it ends up first); a request that rules affinity out gets
    the note saying why instead. Reads pins, writes none; the outcomes are counted."""
    if session is None:
        return decision
    if session.skipped is not None:
        return replace(decision, notes=(*decision.notes, session.skipped))
    now = state.now
    provider = pinned = None
    if session.cache_aware and len(state.cache_pins):
        provider = state.cache_pins.get(_pin_key(session, model), now)
    if session.keep and len(state.session_pins):
        pinned = state.session_pins.get(_pin_key(session, model), now)
    if provider is None and pinned is None:
        return decision  # the common case: no pin
    live = LiveState(cooling=state.live.cooling)
    decision, outcome = keep_cache_pin(decision, provider, live)
    if outcome is not None:
        effects.count(metrics.CACHE_AFFINITY, outcome)
    decision, outcome = keep_session(decision, pinned, live)
    if outcome is not None:
        effects.count(metrics.SESSION_AFFINITY, outcome)
    return decision


def target_pins(
    session: Session | None,
    routing: RoutingRequest,
    virtual: Mapping[str, Any],
    state: RoutingState,
) -> TargetPins:
    """For a virtual model: the target the session is kept on, and its warm target."""
    if session is None or not (session.keep or session.cache_aware):
        return TargetPins()
    if routing.model is None or routing.model not in virtual:
        return TargetPins()
    key = f"{session.key}|{routing.model}"
    kept = state.session_pins.get(key, state.now) if session.keep else None
    warm = state.warm_targets.get(key, state.now) if session.cache_aware else None
    return TargetPins(
        kept={routing.model: kept} if kept else {}, warm={routing.model: warm} if warm else {}
    )


def count_target_pins(outcomes: tuple[str, ...], effects: Effects) -> None:
    for outcome in outcomes:
        effects.count(metrics.SESSION_AFFINITY, outcome)


def remember_success(
    session: Session | None,
    routing: RoutingRequest,
    virtual: Mapping[str, Any],
    model: str | None,
    target: Target,
    now: float,
) -> Effects:
    """After a success: the session stays on the endpoint that served it and, for a
    virtual model, on the target that served it; that target's cache is warm."""
    effects = Effects()
    if session is None:
        return effects
    in_virtual = routing.model if routing.model in virtual else None
    if session.keep:
        effects.pins.append(Pin("session", _pin_key(session, model), target.endpoint.id, now))
        if in_virtual is not None:
            key = f"{session.key}|{in_virtual}"
            effects.pins.append(Pin("session", key, target.endpoint.model, now))
    if session.cache_aware and in_virtual is not None:
        key = f"{session.key}|{in_virtual}"
        effects.pins.append(Pin("warm", key, target.endpoint.model, now, WARM_CACHE_TTL_S))
    return effects


def note_cache_read(
    session: Session | None,
    routing: RoutingRequest | None,
    target: Target | None,
    usage: dict[str, Any] | None,
    now: float,
    effects: Effects,
) -> None:
    """After a response whose usage reports cached prompt tokens: pin the conversation to
    that provider (R-EXE-6). Streams call this at their end, when the usage is known."""
    if target is None or session is None or not session.cache_aware or not cached_tokens(usage):
        return
    model = None if routing is None or routing.auto else target.endpoint.model
    key = _pin_key(session, model)
    effects.pins.append(Pin("cache", key, target.endpoint.provider, now, pin_ttl_s(session.named)))
