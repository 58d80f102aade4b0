"""Cooldowns per endpoint (SPEC R-EXE-3, GM): a 429 starts a cooldown of `base_s`,
doubling with each consecutive trigger up to `max_s`; 401, 403 and 404 get `max_s` at
once (a dead key or a model the provider dropped will not heal in seconds); three
consecutive 5xx or network errors start one too. A success resets the endpoint. An
upstream's `Retry-After` is honoured when it is longer. Targets in cooldown are skipped
while any other target is available (routing/engine/decide.py reads `cooling()`).

State per process, like GM's; no I/O; the caller passes the time (wall clock, epoch
seconds: with several replicas a started cooldown is shared as its absolute end, R-BEY-9).
`listener` hears every cooldown this node starts; `apply_remote` takes one another replica
started, without telling the listener again. The failure count and the doubling stay this
node's own: only the end of a cooldown is shared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_BASE_S = 30.0  # GM's cooldown_base
DEFAULT_MAX_S = 300.0  # GM's cooldown_max (5 min)
SERVER_ERRORS_TO_TRIGGER = 3  # consecutive 5xx / network errors
AT_ONCE_STATUSES = frozenset({401, 403, 404})

# Told of each cooldown this node starts: (endpoint id, until in epoch seconds, reason).
CooldownListener = Callable[[str, float, str], None]


@dataclass(slots=True)
class _EndpointState:
    consecutive_failures: int = 0  # 5xx and network errors since the last success
    triggers: int = 0  # consecutive cooldowns started, for the doubling
    until: float = 0.0  # cooling while now < until
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Started:
    """A cooldown that an outcome started: for metrics and logs."""

    endpoint_id: str
    seconds: float
    reason: str  # rate_limited | auth_or_not_found | server_errors


class Cooldowns:
    def __init__(self, base_s: float = DEFAULT_BASE_S, max_s: float = DEFAULT_MAX_S) -> None:
        self.base_s = base_s
        self.max_s = max_s
        self._state: dict[str, _EndpointState] = {}
        self.listener: CooldownListener | None = None

    def success(self, endpoint_id: str) -> None:
        state = self._state.get(endpoint_id)
        if state is not None:
            state.consecutive_failures = 0
            state.triggers = 0

    def failure(
        self,
        endpoint_id: str,
        http_status: int | None,
        now: float,
        retry_after_s: float | None = None,
        *,
        base_s: float | None = None,
        max_s: float | None = None,
    ) -> Started | None:
        """Record a failed attempt (None status = network error or timeout). `base_s` and
        `max_s` override the defaults for this trigger (the workspace's `cooldown` policy).

        A failure while the endpoint is already cooling came from a request sent before the
        cooldown was known (in flight concurrently): it neither doubles the cooldown nor
        counts towards the next — otherwise a burst of concurrent 429s would take a 30 s
        cooldown to the maximum at once (found by the simulator, docs/simulation.md)."""
        state = self._state.setdefault(endpoint_id, _EndpointState())
        if state.until > now and http_status not in AT_ONCE_STATUSES:
            return None
        base = self.base_s if base_s is None else base_s
        ceiling = self.max_s if max_s is None else max_s
        if http_status == 429:
            seconds, reason = self._doubling(state, base, ceiling), "rate_limited"
        elif http_status in AT_ONCE_STATUSES:
            if state.until >= now + ceiling:
                return None  # already cooling for the maximum
            seconds, reason = ceiling, "auth_or_not_found"
        elif http_status is None or http_status >= 500:
            state.consecutive_failures += 1
            if state.consecutive_failures < SERVER_ERRORS_TO_TRIGGER:
                return None
            state.consecutive_failures = 0
            seconds, reason = self._doubling(state, base, ceiling), "server_errors"
        else:
            return None  # a client error says nothing about the endpoint
        if retry_after_s is not None and retry_after_s > seconds:
            seconds = min(retry_after_s, ceiling)
        state.until = max(state.until, now + seconds)
        state.reason = reason
        if self.listener is not None:
            self.listener(endpoint_id, state.until, reason)
        return Started(endpoint_id, seconds, reason)

    def apply_remote(self, endpoint_id: str, until: float, reason: str) -> None:
        """A cooldown another replica started: the endpoint cools until `until` (or longer,
        if this node's own cooldown ends later). The listener is not told."""
        state = self._state.setdefault(endpoint_id, _EndpointState())
        if until > state.until:
            state.until = until
            state.reason = reason

    def _doubling(self, state: _EndpointState, base_s: float, max_s: float) -> float:
        seconds = min(base_s * float(2**state.triggers), max_s)
        state.triggers += 1
        return seconds

    def cooling(self, now: float) -> frozenset[str]:
        return frozenset(eid for eid, state in self._state.items() if state.until > now)

    def remaining_s(self, endpoint_id: str, now: float) -> float:
        state = self._state.get(endpoint_id)
        return max(0.0, state.until - now) if state else 0.0
