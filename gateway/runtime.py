"""Per-process singletons of the request path, created lazily inside the event loop:
the configuration snapshot holder, the upstream HTTP client and the trace writer."""

from __future__ import annotations

import time

import httpx
from django.conf import settings

from audit.record import TraceWriter
from gateway import metrics
from gateway.config import GatewaySettings
from gateway.snapshot import SnapshotHolder
from gateway.upstream_client import get_client
from routing.adaptive import AdaptiveState
from routing.affinity import SessionPins
from routing.cooldowns import Cooldowns
from routing.live import LiveMetrics
from routing.tier_pins import InProcessTierPins
from routing.types import EndpointInfo

_holder: SnapshotHolder | None = None
_writer: TraceWriter | None = None
_live: LiveMetrics | None = None
_round_robin: dict[str, int] = {}
_tier_pins: InProcessTierPins | None = None
_cooldowns: Cooldowns | None = None
_adaptive = AdaptiveState()  # per process, as GM keeps it (R-EXE-5)
_session_pins = SessionPins()  # session -> endpoint (R-EXE-7), per process


def gateway_settings() -> GatewaySettings:
    return settings.GATEWAY


def snapshots() -> SnapshotHolder:
    global _holder
    if _holder is None:
        _holder = SnapshotHolder(poll_s=settings.GATEWAY.snapshot_poll_s)
    return _holder


def traces() -> TraceWriter:
    global _writer
    if _writer is None:
        _writer = TraceWriter(flush_s=settings.GATEWAY.trace_flush_s)
    return _writer


def live() -> LiveMetrics:
    """This worker's live metrics (per process until rollups move to Redis, R-OBS-2)."""
    global _live
    if _live is None:
        _live = LiveMetrics(
            health_window_s=settings.GATEWAY.health_window_s,
            unhealthy_errors=settings.GATEWAY.unhealthy_errors,
        )
    return _live


def cooldowns() -> Cooldowns:
    """This worker's endpoint cooldowns (per node, as GM keeps them)."""
    global _cooldowns
    if _cooldowns is None:
        _cooldowns = Cooldowns(
            base_s=settings.GATEWAY.cooldown_base_s, max_s=settings.GATEWAY.cooldown_max_s
        )
    return _cooldowns


def session_pins() -> SessionPins:
    return _session_pins


def adaptive() -> AdaptiveState:
    """Latency estimates and in-flight counts per model for the adaptive strategy."""
    return _adaptive


class AdaptiveObserver:
    """Feeds every upstream attempt into the adaptive state, keyed by the model it served."""

    def started(self, endpoint: EndpointInfo) -> None:
        _adaptive.started(endpoint.model)
        metrics.IN_FLIGHT.labels(endpoint.model).inc()

    def finished(self, endpoint: EndpointInfo, latency_ms: float | None) -> None:
        _adaptive.finished(endpoint.model, latency_ms, time.time())
        metrics.IN_FLIGHT.labels(endpoint.model).dec()
        if endpoint.model in _adaptive.ewma:
            metrics.LATENCY_ESTIMATE.labels(endpoint.model).set(
                _adaptive.ewma[endpoint.model].estimate_ms
            )


def tier_pins() -> InProcessTierPins:
    """Upward-only tier pins per alias and session (in process; Redis comes with R-BEY-9)."""
    global _tier_pins
    if _tier_pins is None:
        _tier_pins = InProcessTierPins()
    return _tier_pins


def next_round_robin(alias: str) -> int:
    """The turn of a round-robin virtual model in this worker: 0, 1, 2, …"""
    turn = _round_robin.get(alias, 0)
    _round_robin[alias] = turn + 1
    return turn


def client() -> httpx.AsyncClient:
    return get_client(settings.GATEWAY.upstream_pool_size)


def reset() -> None:
    """Forget the singletons (tests that change configuration in-process)."""
    global _holder, _writer, _live, _tier_pins, _cooldowns, _adaptive, _session_pins
    _cooldowns = None
    _adaptive = AdaptiveState()
    _session_pins = SessionPins()
    _holder = None
    _writer = None
    _live = None
    _tier_pins = None
    _round_robin.clear()
