"""The request path's one door to the process's state (ARCHITECTURE.md "State").

`read(now)` gives a request its `RoutingState`: everything the routing steps may know of
the process — live metrics with the cooling endpoints, round-robin turns, adaptive load,
and read-only views of the pins — all at the request's one `now`. No step reads the
runtime or the clock after that.

Steps return what they would change as `Effects` (turns taken, pins, tier pins, counters,
live observations, the trace), and the request path applies them here, with `apply`, as
each step returns. A dry run (explain) never calls `apply`, so it provably changes nothing
(tests/gateway/state/test_request_state.py). The executor's observer (`AttemptObserver`) is the
one writer that acts during a request: cooldowns must start the moment an attempt fails,
not when the request ends, so a 429 storm cools an endpoint one failover sooner. An
attempt made with the workspace's own provider key (BYOK) that the upstream refuses cools
that credential for that workspace instead, never the shared endpoint (R-BEY-7,
docs/byok.md); `read(now, caller)` then counts the endpoints where that credential would
be used as cooling for that caller alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx

from budgets.rules.route_usage import NO_USAGE
from gateway import metrics
from gateway.gateway_settings import GatewaySettings
from gateway.state import runtime
from gateway.state.snapshot import CredentialEntry, KeyEntry, Snapshot, WorkspaceEntry
from routing.engine.adaptive import AdaptiveState
from routing.engine.attempts import AttemptFailed, refuses_credential
from routing.engine.cooldowns import DOES_NOT_DECRYPT, CredentialCooldowns
from routing.engine.live import Observation, SeriesStats, credential_series
from routing.engine.routes import Usage
from routing.engine.types import EndpointInfo, LiveState

log = logging.getLogger(__name__)


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
    credentials: CredentialView  # which workspaces' own credentials cool (R-BEY-7)


class UsageView(Usage, Protocol):
    def as_json(self) -> dict[str, list[int]]: ...


class UsageReader(Protocol):
    def of(self, key_id: int, now: float) -> UsageView: ...


class CredentialView(Protocol):
    """The workspaces' credential cooldowns, read only."""

    def cooling(self, workspace_id: int, now: float) -> frozenset[str]: ...


class CredentialUser(Protocol):
    """Whose own credentials a request would use: a `Caller` is one."""

    @property
    def workspace(self) -> WorkspaceEntry: ...
    @property
    def key(self) -> KeyEntry: ...
    @property
    def snapshot(self) -> Snapshot: ...


def read(now: float, caller: CredentialUser | None = None) -> RoutingState:
    """The state at `now`. With `caller`, `live.cooling` also holds the endpoints where
    its workspace's own credential would be used and is cooling (R-BEY-7): skipped for
    this caller alone, exactly like endpoints in cooldown. Without, endpoints only."""
    cooldowns = runtime.cooldowns()
    cooling = cooldowns.cooling(now)
    if caller is not None:
        providers = cooldowns.credentials.cooling(caller.workspace.id, now)
        cooling |= byok_cooling_endpoints(caller, providers)
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
        usage=NO_USAGE,  # a key whose routes read usage gets it from the store (admit.py)
        credentials=cooldowns.credentials,
    )


def own_credential(
    workspace: WorkspaceEntry, key_id: int, endpoint: EndpointInfo
) -> CredentialEntry | None:
    """The workspace's own credential for the endpoint's provider when it applies to this
    key and the endpoint's model (R-BYOK-1: restrictable to models and to API keys); None
    when the managed credential serves, as for a workspace without one."""
    own = workspace.credentials.get(endpoint.provider)
    if own is None or (own.models and endpoint.model not in own.models):
        return None
    if own.api_key_ids and key_id not in own.api_key_ids:
        return None
    return own


def byok_cooling_endpoints(caller: CredentialUser, providers: frozenset[str]) -> frozenset[str]:
    """The endpoints of the cooling `providers` where `caller` would send its own key
    with no managed fallback. With `managed_fallback` the managed key serves there while
    the own one cools (gateway/request_path/execute.py), so those endpoints stay."""
    if not providers:
        return frozenset()
    workspace, key_id = caller.workspace, caller.key.pk
    return frozenset(
        endpoint.id
        for endpoint in caller.snapshot.all_endpoints
        if endpoint.provider in providers
        and (own := own_credential(workspace, key_id, endpoint)) is not None
        and not own.managed_fallback
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
    # (credential series, provider, observation): attempts with a workspace's own key, also
    # in `observations`; kept in a `LiveMetrics` of their own, which routing never reads
    credential_observations: list[tuple[str, str, Observation]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)

    def count(self, metric: Any, *labels: str, by: float = 1) -> None:
        self.counts.append((metric, labels, by))

    def sample(self, metric: Any, *labels: str, value: float) -> None:
        self.samples.append((metric, labels, value))


_PIN_STORES = {
    "session": runtime.session_pins,
    "cache": runtime.cache_pins,
    "warm": runtime.warm_targets,
}


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
    if effects.observations:
        live = runtime.live()
        for endpoint_id, provider, observation in effects.observations:
            live.observe(endpoint_id, provider, observation)
    if effects.credential_observations:
        own = runtime.credential_live()
        for series_id, provider, observation in effects.credential_observations:
            own.observe(series_id, provider, observation)
    for metric, labels, by in effects.counts:
        metrics.child(metric, *labels).inc(by)
    for metric, labels, value in effects.samples:
        metrics.child(metric, *labels).observe(value)


# Failures that say nothing about the endpoint: the request cannot be expressed in its API,
# or this workspace has no credential for it.
NOT_THE_ENDPOINTS = frozenset({"unsupported_request", "no_credential"})
CLIENT_FAULTS = frozenset({400, 413, 422})  # the request's fault, not the endpoint's


class Clock(Protocol):
    def now(self) -> float: ...


class AttemptObserver:
    """The executor's observer for one request: the adaptive state's in-flight counts and
    latency samples, and the cooldowns (R-EXE-3) as soon as each attempt ends. Cooldown
    lengths follow the workspace's policy; times come from the request's clock.

    `uses_own[i]` says whether the i-th target carries the workspace's own credential:
    the executor starts its targets one at a time, in order, so the n-th `started` is the
    n-th target. Such an attempt's refusal by the upstream (any HTTP error but the
    request's own faults; a key that does not decrypt) cools that credential for
    `workspace` alone (R-BEY-7); no answer at all (connect error, timeout, malformed
    body) speaks of the endpoint, whichever key was sent."""

    def __init__(
        self,
        cooldown: Mapping[str, float],
        clock: Clock,
        *,
        workspace: WorkspaceEntry | None = None,
        uses_own: Sequence[bool] = (),
    ) -> None:
        self.cooldown = cooldown  # base_s / max_s, if the policy sets them
        self.clock = clock
        self.workspace = workspace
        self.uses_own = tuple(uses_own)
        self._started = 0  # attempts started so far
        self._own: WorkspaceEntry | None = None  # the attempt under way used its own key

    def started(self, endpoint: EndpointInfo) -> None:
        index, self._started = self._started, self._started + 1
        own = index < len(self.uses_own) and self.uses_own[index]
        self._own = self.workspace if own else None
        runtime.adaptive().started(endpoint.model)
        metrics.child(metrics.IN_FLIGHT, endpoint.model).inc()

    def finished(
        self, endpoint: EndpointInfo, latency_ms: float | None, failure: AttemptFailed | None
    ) -> None:
        adaptive = runtime.adaptive()
        adaptive.finished(endpoint.model, latency_ms, self.clock.now())
        metrics.child(metrics.IN_FLIGHT, endpoint.model).dec()
        if endpoint.model in adaptive.ewma:
            estimate = adaptive.ewma[endpoint.model].estimate_ms
            metrics.child(metrics.LATENCY_ESTIMATE, endpoint.model).set(estimate)
        cooldowns, own = runtime.cooldowns(), self._own
        if failure is None:
            if latency_ms is not None:
                cooldowns.success(endpoint.id)
                if own is not None:
                    cooldowns.credentials.success(own.id, endpoint.provider)
            return
        if failure.kind == "unsupported_request" or failure.http_status in CLIENT_FAULTS:
            return
        if own is not None and refuses_credential(failure.kind, failure.http_status):
            self._cool_credential(cooldowns.credentials, own, endpoint, failure)
            return
        if failure.kind in NOT_THE_ENDPOINTS:
            return
        started = cooldowns.failure(
            endpoint.id,
            failure.http_status,
            self.clock.now(),
            failure.retry_after,
            base_s=self.cooldown.get("base_s"),
            max_s=self.cooldown.get("max_s"),
        )
        if started is not None:
            metrics.COOLDOWNS.labels(endpoint.provider, endpoint.id, started.reason).inc()

    def _cool_credential(
        self,
        credentials: CredentialCooldowns,
        workspace: WorkspaceEntry,
        endpoint: EndpointInfo,
        failure: AttemptFailed,
    ) -> None:
        if failure.kind == "no_credential":
            reason = DOES_NOT_DECRYPT
        else:
            reason = f"http_{failure.http_status}"
        started = credentials.failure(
            workspace.id,
            endpoint.provider,
            reason,
            failure.http_status,
            self.clock.now(),
            failure.retry_after,
            base_s=self.cooldown.get("base_s"),
            max_s=self.cooldown.get("max_s"),
        )
        if started is not None:  # names the workspace and provider only, never the key
            log.warning(
                "workspace %s: its own %s credential cools for %.0f s (%s, %s)",
                workspace.slug,
                endpoint.provider,
                started.seconds,
                reason,
                started.reason,
            )


async def current_snapshot() -> Snapshot:
    return await runtime.snapshots().current()


async def snapshot_knowing(lookup_id: str | None) -> Snapshot:
    """The current snapshot, reloaded first when it lacks a key the database has (R-KEY-1)."""
    return await runtime.snapshots().knowing(lookup_id)


def upstream_client() -> httpx.AsyncClient:
    return runtime.client()


def gateway_settings() -> GatewaySettings:
    return runtime.gateway_settings()


async def flush_traces() -> None:
    """This worker's queued traces become visible to a read."""
    await runtime.traces().flush()


async def drain_trace_spool() -> None:
    """Traces spooled while the database was away, written now if it takes them."""
    await runtime.traces().drain()


def live_by_provider() -> dict[str, dict[str, object]]:
    """`GET /health`: this worker's live numbers per provider, now."""
    return runtime.live().by_provider(time.time())


def credentials_health(
    workspace_id: int, providers: Iterable[str], now: float
) -> dict[str, dict[str, object]]:
    """The health of a workspace's own credentials (`providers`), by provider, at `now`:
    for `GET /health` with its key, the management API and the console. A cooldown's end
    is shared between replicas; the failures are this worker's; the live numbers are the
    rollup of every worker and replica when a fresh one exists, else this worker's own
    (R-OBS-2, as `/health` shows endpoints). Never a secret. Safe to call from a thread
    other than the event loop's (the management API's views run in one)."""
    series = {provider: credential_series(workspace_id, provider) for provider in providers}
    live = runtime.credential_live().series_stats(series.values(), now)
    shown: dict[str, dict[str, object]] = {}
    for health in runtime.cooldowns().credentials.health(workspace_id, series, now):
        cooling = health.cooling
        shown[health.provider] = {
            "status": "cooling" if cooling else "ok",
            "cooling_until": _iso(cooling.until) if cooling else None,
            "cooling_reason": cooling.reason if cooling else None,
            "last_failure": health.last_failure,
            "last_failure_at": _iso(health.last_failure_at),
            "recent_failures": health.recent_failures,
            **_live_numbers(live.get(series[health.provider])),
        }
    return shown


def _live_numbers(found: SeriesStats | None) -> dict[str, object]:
    """A credential's last five minutes (R-OBS-2): the attempts with its key, the share
    of them that failed against reliability (R-EXE-4: not 429s, not geo-blocks), latency
    and streams' time to first token. 0 and nulls while it has no attempt in the window."""
    if found is None:
        return {
            "requests": 0,
            "error_rate": None,
            "latency_p50_ms": None,
            "latency_p99_ms": None,
            "ttft_p50_ms": None,
        }
    stats = found.stats
    return {
        "requests": stats.samples,
        "error_rate": _rounded(stats.error_rate),
        "latency_p50_ms": _rounded(stats.latency_p50_ms),
        "latency_p99_ms": _rounded(stats.latency_p99_ms),
        "ttft_p50_ms": _rounded(found.ttft_ms[0]),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _iso(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


async def start() -> None:
    """ASGI start-up: subscribe and load the other replicas' shared state (bounded wait)."""
    await runtime.start_sharing()


async def stop() -> None:
    """ASGI shutdown: queued traces written, sharing stopped."""
    await runtime.traces().flush()
    await runtime.stop_sharing()
