"""Where rate-limit state lives (SPEC R-LIM-1): the protocol both stores implement, and
`MemoryLimiter`, the embedded default's store — one process, dicts behind a lock. The
shared store for several replicas is redis/limits.py's RedisLimiter.

A request acquires once before its first attempt and releases once on every exit path:
release settles the reserved tokens to the used ones and frees its concurrency lease. A
lease expires after `lease_ttl_s`, so a process killed mid-request cannot hold a slot for
ever; release is idempotent per lease, and a no-op once the lease has expired (the
reservation then stays charged: the conservative side)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from budgets.rules.limits import (
    Kind,
    LimitSpec,
    LimitUse,
    LimitVerdict,
    RateKey,
    RateState,
    admit,
    drained_level,
    empty_at,
    plan_checks,
    settled,
    use_of,
)

# A lease outlives the longest request: the default total deadline
# (SWITCHYARD_TOTAL_TIMEOUT_S, 600 s) plus a minute for settling.
LEASE_TTL_S = 660.0
# How often (in the callers' time) idle state is swept out: buckets drained empty (at most a
# minute after their last request) and expired leases. Memory stays bounded by the scopes
# active in the last minute plus the requests in flight.
SWEEP_INTERVAL_S = 60.0


class LimitStore(Protocol):
    async def acquire(
        self, specs: Sequence[LimitSpec], *, tokens: int, lease: str, now: float
    ) -> LimitVerdict:
        """Admit a request reserving `tokens` in every scope of `specs`, or take nothing
        anywhere. `lease` names the request (unique per request) for its release."""
        ...

    async def release(
        self,
        specs: Sequence[LimitSpec],
        *,
        lease: str,
        tokens_reserved: int,
        tokens_used: int,
        now: float,
    ) -> None:
        """Settle an admitted request: refund unused tokens (charge an overrun), free the
        concurrency lease. `specs` are the ones it acquired with."""
        ...

    async def usage(self, specs: Sequence[LimitSpec], *, now: float) -> list[LimitUse]:
        """What each limit of `specs` has in use now, in plan order; reads only."""
        ...


class MemoryLimiter:
    """In-process limits. A threading.Lock, not an asyncio one: sync views run in threads,
    and no await happens while it is held."""

    def __init__(self, *, lease_ttl_s: float = LEASE_TTL_S) -> None:
        self.lease_ttl_s = lease_ttl_s
        self._lock = threading.Lock()
        self._rates: dict[RateKey, RateState] = {}
        self._empty_at: dict[RateKey, float] = {}  # when each bucket can be forgotten
        self._leases: dict[str, dict[str, float]] = {}  # scope -> lease -> expires at
        self._held: dict[str, float] = {}  # admitted lease -> expires at (release once)
        self._swept_at = float("-inf")

    async def acquire(
        self, specs: Sequence[LimitSpec], *, tokens: int, lease: str, now: float
    ) -> LimitVerdict:
        planned = plan_checks(specs, tokens=tokens)
        with self._lock:
            self._sweep(now)
            live = {
                one.scope: self._live_leases(one.scope, now)
                for one in planned
                if one.kind is Kind.CONCURRENT
            }
            result, updates = admit(planned, self._rates, live, now=now)
            if not result.admitted:
                return result
            limits = {(one.scope, one.kind): one.limit for one in planned}
            for key, state in updates.items():
                self._store_rate(key, state, limits[key])
            expires_at = now + self.lease_ttl_s
            for scope in live:
                self._leases.setdefault(scope, {})[lease] = expires_at
            self._held[lease] = expires_at
            return result

    async def release(
        self,
        specs: Sequence[LimitSpec],
        *,
        lease: str,
        tokens_reserved: int,
        tokens_used: int,
        now: float,
    ) -> None:
        with self._lock:
            expires_at = self._held.pop(lease, None)
            if expires_at is None or expires_at <= now:
                return  # released already, never admitted, or expired
            for spec in specs:
                leases = self._leases.get(spec.scope)
                if leases is not None:
                    leases.pop(lease, None)
                if spec.tokens_per_minute:  # not None, nor 0 (nothing to settle against)
                    key = (spec.scope, Kind.TOKENS)
                    state = settled(
                        self._rates.get(key),
                        limit=spec.tokens_per_minute,
                        delta=tokens_used - tokens_reserved,
                        now=now,
                    )
                    self._store_rate(key, state, spec.tokens_per_minute)

    async def usage(self, specs: Sequence[LimitSpec], *, now: float) -> list[LimitUse]:
        with self._lock:
            return [
                use_of(one, float(self._live_leases(one.scope, now)))
                if one.kind is Kind.CONCURRENT
                else use_of(
                    one,
                    drained_level(self._rates.get((one.scope, one.kind)), limit=one.limit, now=now),
                )
                for one in plan_checks(specs, tokens=0)
            ]

    @property
    def tracked(self) -> int:
        """Entries held (buckets, leases, admitted requests): what the sweep bounds."""
        with self._lock:
            leases = sum(len(by_lease) for by_lease in self._leases.values())
            return len(self._rates) + leases + len(self._held)

    def _live_leases(self, scope: str, now: float) -> int:
        leases = self._leases.get(scope, {})
        for lease in [lease for lease, expires_at in leases.items() if expires_at <= now]:
            del leases[lease]
        return len(leases)

    def _store_rate(self, key: RateKey, state: RateState, limit: int) -> None:
        self._rates[key] = state
        self._empty_at[key] = empty_at(state, limit=limit)

    def _sweep(self, now: float) -> None:
        if now - self._swept_at < SWEEP_INTERVAL_S:
            return
        self._swept_at = now
        for key in [key for key, at in self._empty_at.items() if at <= now]:
            del self._rates[key], self._empty_at[key]
        for scope in list(self._leases):
            if self._live_leases(scope, now) == 0:
                del self._leases[scope]
        for lease in [lease for lease, at in self._held.items() if at <= now]:
            del self._held[lease]
