"""Affinity on the request path (SPEC R-EXE-6, R-EXE-7): which session a request belongs
to, and the three things that keep a session where its caches are warm —

- session keeping: the endpoint that last served the session goes first while it may serve
  (routing/affinity.py), 24 h sliding;
- cache-aware pinning: after a provider reports a real prompt-cache read, its endpoints go
  first for 15 min, or 24 h for a session the client named (routing/cache_affinity.py);
- the warm-cache boost: in an adaptive virtual model, the target that last served the
  session weighs ×8 for 10 min (routing/adaptive.py); session keeping also keeps a
  session on its virtual model's target (routing/virtual.py `arrange_targets`).

Policy filters and cooldowns always win: each only reorders a decision's own attempt list
or reweights targets that are not cooling. An explicit `provider.order` wins too (D-15): such
a request neither reads nor writes any pin, and each of its decisions says so. The pure rules
live in routing/; this module reads and writes the per-process stores of gateway/runtime.py
(shared through Redis when set).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from django.http import HttpRequest

from gateway import metrics, runtime
from gateway.api.context import CallContext
from gateway.api.plan import TargetPins
from gateway.execute import Target
from routing.adaptive import WARM_CACHE_TTL_S
from routing.affinity import affinity_skipped, keep_session
from routing.cache_affinity import cache_aware, cached_tokens, keep_cache_pin, pin_ttl_s
from routing.sessions import detect_session
from routing.types import Decision, LiveState, RoutingRequest


class Session:
    """A request's session, detected lazily: hashing the opening messages is paid only when
    a pin store with pins in it is consulted, or a pin is written."""

    __slots__ = ("_detect", "_key", "_named", "keep", "cache_aware", "skipped")

    def __init__(
        self,
        detect: Callable[[], tuple[str, str]],
        *,
        keep: bool,
        cache_aware: bool,
        skipped: str | None = None,
    ) -> None:
        self._detect = detect
        self._key: str | None = None
        self._named = False
        self.keep = keep  # session keeping and virtual-target pins are on for this request
        self.cache_aware = cache_aware  # cache-aware pinning and the warm boost are on
        self.skipped = skipped  # why this request uses no pin at all (its decisions' note)

    @property
    def key(self) -> str:
        """Scoped to workspace and API key (routing/sessions.py)."""
        if self._key is None:
            self._key, source = self._detect()
            self._named = source != "hash"
        return self._key

    @property
    def named(self) -> bool:
        """The client sent the id; False for the hash of the opening messages."""
        _ = self.key
        return self._named


def session_of(
    ctx: CallContext, request: HttpRequest, body: dict[str, Any], routing: RoutingRequest
) -> Session | None:
    """The request's session, or None when no affinity is on for it. When affinity is on but
    the request itself rules it out (an explicit `provider.order`, D-15), a session that
    reads and writes no pin and only carries the note saying why."""
    keep = runtime.gateway_settings().session_affinity and routing.session_affinity
    cache = cache_aware(routing.provider.extra)
    if not (keep or cache):
        return None
    skipped = affinity_skipped(routing)
    if skipped is not None:
        keep = cache = False
    return Session(
        lambda: detect_session(
            request.headers,
            body,
            workspace_id=ctx.workspace.id,
            api_key_id=ctx.key.pk,
            model=ctx.requested_model,
        ),
        keep=keep,
        cache_aware=cache,
        skipped=skipped,
    )


def _pin_key(session: Session, model: str | None) -> str:
    return f"{session.key}|{model or 'auto'}"


def apply_affinity(
    decision: Decision, model: str | None, session: Session | None, *, dry_run: bool = False
) -> Decision:
    """Reorder one model's decision for the session: the prompt-cache pin, then the session
    pin (the more specific, so it ends up first); a request that rules affinity out gets
    the note saying why instead. Reads pins, writes none. `dry_run` (explain) moves no
    affinity counter."""
    if session is None:
        return decision
    if session.skipped is not None:
        return replace(decision, notes=(*decision.notes, session.skipped))
    now = time.time()
    provider = pinned = None
    if session.cache_aware and len(runtime.cache_pins()):
        provider = runtime.cache_pins().get(_pin_key(session, model), now)
    if session.keep and len(runtime.session_pins()):
        pinned = runtime.session_pins().get(_pin_key(session, model), now)
    if provider is None and pinned is None:
        return decision  # the common case: no pin, no cooldown set to build
    live = LiveState(cooling=runtime.cooldowns().cooling(now))
    decision, outcome = keep_cache_pin(decision, provider, live)
    if outcome is not None and not dry_run:
        metrics.CACHE_AFFINITY.labels(outcome).inc()
    decision, outcome = keep_session(decision, pinned, live)
    if outcome is not None and not dry_run:
        metrics.SESSION_AFFINITY.labels(outcome).inc()
    return decision


def target_pins(
    session: Session | None, routing: RoutingRequest, virtual: Mapping[str, Any]
) -> TargetPins:
    """For a virtual model: the target the session is kept on, and its warm target."""
    if session is None or not (session.keep or session.cache_aware):
        return TargetPins()
    if routing.model is None or routing.model not in virtual:
        return TargetPins()
    now = time.time()
    key = f"{session.key}|{routing.model}"
    kept = runtime.session_pins().get(key, now) if session.keep else None
    warm = runtime.warm_targets().get(key, now) if session.cache_aware else None
    return TargetPins(
        kept={routing.model: kept} if kept else {}, warm={routing.model: warm} if warm else {}
    )


def count_target_pins(outcomes: list[str]) -> None:
    for outcome in outcomes:
        metrics.SESSION_AFFINITY.labels(outcome).inc()


def remember_success(
    ctx: CallContext, session: Session | None, model: str | None, target: Target
) -> None:
    """After a success: the session stays on the endpoint that served it and, for a
    virtual model, on the target that served it; that target's cache is warm."""
    if session is None:
        return
    now = time.time()
    routing = ctx.routing
    virtual = (
        routing.model if routing is not None and routing.model in ctx.snapshot.virtual else None
    )
    if session.keep:
        runtime.session_pins().pin(_pin_key(session, model), target.endpoint.id, now)
        if virtual is not None:
            runtime.session_pins().pin(f"{session.key}|{virtual}", target.endpoint.model, now)
    if session.cache_aware and virtual is not None:
        key = f"{session.key}|{virtual}"
        runtime.warm_targets().pin(key, target.endpoint.model, now, ttl_s=WARM_CACHE_TTL_S)


def note_cache_read(ctx: CallContext, target: Target | None, usage: dict | None) -> None:
    """After a response whose usage reports cached prompt tokens: pin the conversation to
    that provider (R-EXE-6). Streams call this at their end, when the usage is known."""
    session = ctx.session
    if target is None or session is None or not session.cache_aware or not cached_tokens(usage):
        return
    model = None if ctx.routing is None or ctx.routing.auto else target.endpoint.model
    runtime.cache_pins().pin(
        _pin_key(session, model), target.endpoint.provider, time.time(),
        ttl_s=pin_ttl_s(session.named),
    )  # fmt: skip
