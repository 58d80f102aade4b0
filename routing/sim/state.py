"""What one simulated gateway process keeps between requests — live metrics, cooldowns,
adaptive load state, session pins, the round-robin counter — and how a finished request
feeds it. The same bookkeeping runs under every strategy, as in the gateway.

`record` restates gateway/request_path/record.py `_observe_live`, and `started`/`finished`
gateway/state/request_state.py `AttemptObserver` (adaptive state and cooldowns as each
attempt ends); both sit in modules that import Django. Keep them in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from routing.engine.adaptive import WARM_CACHE_TTL_S, AdaptiveState
from routing.engine.affinity.keeping import SessionPins
from routing.engine.cooldowns import Cooldowns
from routing.engine.live import LiveMetrics, Observation, failure_kind
from routing.engine.types import EndpointInfo
from routing.sim.providers import OK


@dataclass(frozen=True, slots=True)
class AttemptResult:
    endpoint: EndpointInfo
    status: int  # HTTP status; OK for a success
    latency_ms: float
    started_s: float  # simulated time the attempt started

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass(slots=True)
class GatewayState:
    """Gateway defaults: 30 s health window, 3 errors → unhealthy, cooldowns 30 s … 300 s."""

    live: LiveMetrics = field(default_factory=LiveMetrics)
    cooldowns: Cooldowns = field(default_factory=Cooldowns)
    adaptive: AdaptiveState = field(default_factory=AdaptiveState)
    pins: SessionPins = field(default_factory=SessionPins)
    warm: SessionPins = field(default_factory=lambda: SessionPins(ttl_s=WARM_CACHE_TTL_S))
    round_robin: int = 0

    def started(self, endpoint: EndpointInfo) -> None:
        """An attempt went out: in flight for the adaptive strategy (keyed by model)."""
        self.adaptive.started(endpoint.model)

    def finished(self, attempt: AttemptResult, now_s: float) -> None:
        """An attempt ended: a latency sample for successes only, as the gateway takes, and
        its cooldown bookkeeping at once (gateway/state/request_state.py
        `AttemptObserver`)."""
        latency = attempt.latency_ms if attempt.ok else None
        self.adaptive.finished(attempt.endpoint.model, latency, now_s)
        if attempt.ok:
            self.cooldowns.success(attempt.endpoint.id)
        else:
            self.cooldowns.failure(attempt.endpoint.id, attempt.status, now_s)

    def record(
        self, attempts: Sequence[AttemptResult], completion_tokens: int, now_s: float
    ) -> None:
        """After the request: every attempt into live metrics (R-EXE-2, R-EXE-4)."""
        for attempt in attempts:
            endpoint = attempt.endpoint
            seconds = attempt.latency_ms / 1000
            self.live.observe(
                endpoint.id,
                endpoint.provider,
                Observation(
                    at=now_s,
                    ok=attempt.ok,
                    latency_ms=attempt.latency_ms if attempt.ok else None,
                    tokens_per_s=completion_tokens / seconds if attempt.ok else None,
                    kind="" if attempt.ok else failure_kind(attempt.status),
                ),
            )

    def pin(
        self, session: str, endpoint: EndpointInfo, now_s: float, virtual: str | None = None
    ) -> None:
        """After a success the session stays on the endpoint that served it, per model, and
        on the virtual model's target; that target's cache is warm (gateway/request_path/
        affinity.py `remember_success`)."""
        self.pins.pin(pin_key(session, endpoint.model), endpoint.id, now_s)
        if virtual is not None:
            self.pins.pin(pin_key(session, virtual), endpoint.model, now_s)
            self.warm.pin(pin_key(session, virtual), endpoint.model, now_s)


def pin_key(session: str, model: str) -> str:
    """As gateway/request_path/resolve/affinity.py `_pin_key`: a session's pin is per
    model of the chain."""
    return f"{session}|{model}"
