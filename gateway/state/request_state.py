"""The request path's one door to the process's state (ARCHITECTURE.md "State").

`read(now)` gives a request its `RoutingState`: everything the routing steps may know of
the process — live metrics with the cooling endpoints, round-robin turns, adaptive load,
and read-only views of the pins — all at the request's one `now`. No step reads the
runtime or the clock after that.

Steps return what they would change as `Effects` (turns taken, pins, tier pins, counters,
live observations, the trace), and the request path applies them here, with `apply`, as
each step returns. A dry run (explain) never calls `apply`, so it provably changes nothing
(tests/gateway/test_request_state.py). The executor's observer (`AttemptObserver`) is the
one writer that acts during a request: cooldowns must start the moment an attempt fails,
not when the request ends, so a 429 storm cools an endpoint one failover sooner.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from gateway import metrics
from gateway.gateway_settings import GatewaySettings
from gateway.state import runtime
from gateway.state.snapshot import Snapshot
from routing.engine.adaptive import AdaptiveState
from routing.engine.attempts import AttemptFailed
from routing.engine.live import Observation
from routing.engine.routes import Usage
from routing.engine.types import EndpointInfo, LiveState


class PinView(Protocol):
    """A pin store, read only: the key's live value at `now`, or None."""

    def get(self, key: str, now: float) -> str | None: ...
    def __len__(self) -> int: ...


@dataclass(frozen=True, slots=True)
class RoutingState:
    """What one request's routing steps know of the process, read once at its start."""

    now: float  # wall clock, epoch seconds: the request's one reading
    settings: GatewaySettings
    live: LiveState  # live metrics and the endpoints in cooldown at `now`
    round_robin: Mapping[str, int]  # the turn each round-robin virtual model is at
    adaptive: AdaptiveState  # per-model load for the adaptive strategy (read, never written)
    session_pins: PinView  # session -> endpoint; session|virtual -> target (R-EXE-7)
    cache_pins: PinView  # conversation -> provider holding its prompt cache (R-EXE-6)
    warm_targets: PinView  # session|virtual -> the target whose cache is warm (R-EXE-6)
    tier_pins: PinView  # alias|session -> "hard" (R-TIER-3)
    usage: UsageReader  # each routed key's usage this period (route rate/budget nodes)


class UsageView(Usage, Protocol):
    def as_json(self) -> dict[str, list[int]]: ...


class UsageReader(Protocol):
    def of(self, key_id: int, now: float) -> UsageView: ...


def read(now: float) -> RoutingState:
    cooling = runtime.cooldowns().cooling(now)
    live = runtime.live().state(now)
    return RoutingState(
        now=now,
        settings=runtime.gateway_settings(),
        live=LiveState(stats=live.stats, unhealthy=live.unhealthy, cooling=cooling),
        round_robin=runtime.round_robin_turns(),
        adaptive=runtime.adaptive(),
        session_pins=runtime.session_pins(),
        cache_pins=runtime.cache_pins(),
        warm_targets=runtime.warm_targets(),
        tier_pins=runtime.tier_pins(),
        usage=runtime.key_usage(),
    )


@dataclass(frozen=True, slots=True)
class Pin:
    store: str  # "session" | "cache" | "warm"
    key: str
    value: str
    now: float
    ttl_s: float | None = None  # None: the store's own TTL


@dataclass(frozen=True, slots=True)
class TierPin:
    action: str  # "pin_hard" | "touch"
    key: str
    now: float
    ttl_s: float


@dataclass(slots=True)
class Effects:
    """What a step would change, in the order it would change it."""

    turns: list[str] = field(default_factory=list)  # round-robin virtual models
    pins: list[Pin] = field(default_factory=list)
    tier_pins: list[TierPin] = field(default_factory=list)
    counts: list[tuple[Any, tuple[str, ...], float]] = field(default_factory=list)
    samples: list[tuple[Any, tuple[str, ...], float]] = field(default_factory=list)
    observations: list[tuple[str, str, Observation]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)
    usage: list[tuple[int, float, int]] = field(default_factory=list)  # key, now, cost µ$

    def count(self, metric: Any, *labels: str, by: float = 1) -> None:
        self.counts.append((metric, labels, by))

    def sample(self, metric: Any, *labels: str, value: float) -> None:
        self.samples.append((metric, labels, value))


_PIN_STORES = {"session": runtime.session_pins, "cache": runtime.cache_pins,
               "warm": runtime.warm_targets}  # fmt: skip


def apply(effects: Effects) -> None:
    """Make a step's effects real (never called for a dry run)."""
    if effects.turns:
        runtime.take_round_robin_turns(effects.turns)
    for pin in effects.pins:
        _PIN_STORES[pin.store]().pin(pin.key, pin.value, pin.now, ttl_s=pin.ttl_s)
    for tier_pin in effects.tier_pins:
        pins = runtime.tier_pins()
        if tier_pin.action == "pin_hard":
            pins.pin_hard(tier_pin.key, tier_pin.now, tier_pin.ttl_s)
        else:
            pins.touch(tier_pin.key, tier_pin.now, tier_pin.ttl_s)
    for trace in effects.traces:
        runtime.traces().record(trace)
    for key_id, now, cost in effects.usage:
        runtime.key_usage().add(key_id, now, cost)
    if effects.observations:
        live = runtime.live()
        for endpoint_id, provider, observation in effects.observations:
            live.observe(endpoint_id, provider, observation)
    for metric, labels, by in effects.counts:
        metric.labels(*labels).inc(by)
    for metric, labels, value in effects.samples:
        metric.labels(*labels).observe(value)


# Failures that say nothing about the endpoint: the request cannot be expressed in its API,
# or this workspace has no credential for it.
NOT_THE_ENDPOINTS = frozenset({"unsupported_request", "no_credential"})
CLIENT_FAULTS = frozenset({400, 413, 422})  # the request's fault, not the endpoint's


class Clock(Protocol):
    def now(self) -> float: ...


class AttemptObserver:
    """The executor's observer for one request: the adaptive state's in-flight counts and
    latency samples, and the cooldowns (R-EXE-3) as soon as each attempt ends. Cooldown
    lengths follow the workspace's policy; times come from the request's clock."""

    def __init__(self, cooldown: Mapping[str, float], clock: Clock) -> None:
        self.cooldown = cooldown  # base_s / max_s, if the policy sets them
        self.clock = clock

    def started(self, endpoint: EndpointInfo) -> None:
        runtime.adaptive().started(endpoint.model)
        metrics.IN_FLIGHT.labels(endpoint.model).inc()

    def finished(
        self, endpoint: EndpointInfo, latency_ms: float | None, failure: AttemptFailed | None
    ) -> None:
        adaptive = runtime.adaptive()
        adaptive.finished(endpoint.model, latency_ms, self.clock.now())
        metrics.IN_FLIGHT.labels(endpoint.model).dec()
        if endpoint.model in adaptive.ewma:
            estimate = adaptive.ewma[endpoint.model].estimate_ms
            metrics.LATENCY_ESTIMATE.labels(endpoint.model).set(estimate)
        cooldowns = runtime.cooldowns()
        if failure is None:
            if latency_ms is not None:
                cooldowns.success(endpoint.id)
            return
        if failure.kind in NOT_THE_ENDPOINTS or failure.http_status in CLIENT_FAULTS:
            return
        started = cooldowns.failure(
            endpoint.id, failure.http_status, self.clock.now(), failure.retry_after,
            base_s=self.cooldown.get("base_s"), max_s=self.cooldown.get("max_s"),
        )  # fmt: skip
        if started is not None:
            metrics.COOLDOWNS.labels(endpoint.provider, endpoint.id, started.reason).inc()


async def current_snapshot() -> Snapshot:
    return await runtime.snapshots().current()


def upstream_client() -> httpx.AsyncClient:
    return runtime.client()


def gateway_settings() -> GatewaySettings:
    return runtime.gateway_settings()


async def flush_traces() -> None:
    """This worker's queued traces become visible to a read."""
    await runtime.traces().flush()


def live_by_provider() -> dict[str, dict[str, object]]:
    """`GET /health`: this worker's live numbers per provider, now."""
    return runtime.live().by_provider(time.time())


async def start() -> None:
    """ASGI start-up: subscribe and load the other replicas' shared state (bounded wait)."""
    await runtime.start_sharing()


async def stop() -> None:
    """ASGI shutdown: queued traces written, sharing stopped."""
    await runtime.traces().flush()
    await runtime.stop_sharing()
