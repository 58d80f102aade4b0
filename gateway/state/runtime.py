"""Per-process singletons of the request path, created lazily inside the event loop:
the configuration snapshot holder, the upstream HTTP client, the trace writer, the live
metrics (per endpoint, and per workspace's own credential apart), and the stores replicas
share through Redis when REDIS_URL is set (R-BEY-9): cooldowns, session pins and tier
pins. Those are created together with their `SharedState`, so what it loads at start-up
lands in the stores the request path reads; the ASGI lifespan starts and stops it
(`start_sharing`, `stop_sharing`), and the first use starts it where no lifespan runs."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from django.conf import settings

from audit.record import TraceWriter
from audit.spool import TraceSpool
from gateway.gateway_settings import GatewaySettings
from gateway.state import admission_state
from gateway.state.db_thread import in_db_thread
from gateway.state.shared_state import SharedState
from gateway.state.snapshot import SnapshotHolder
from gateway.upstream.client import get_client
from routing.engine.adaptive import WARM_CACHE_TTL_S, AdaptiveState
from routing.engine.affinity.keeping import SessionPins
from routing.engine.affinity.prompt_cache import CACHE_PIN_TTL_S
from routing.engine.cooldowns import Cooldowns
from routing.engine.live import LiveMetrics
from routing.engine.tiers.pins import InProcessTierPins

_holder: SnapshotHolder | None = None
_writer: TraceWriter | None = None
_live: LiveMetrics | None = None
_credential_live: LiveMetrics | None = None
_round_robin: dict[str, int] = {}
_adaptive = AdaptiveState()  # per process, as GM keeps it (R-EXE-5)


@dataclass(frozen=True, slots=True)
class _SharedStores:
    cooldowns: Cooldowns
    session_pins: SessionPins  # session -> endpoint (R-EXE-7); session|virtual -> target
    cache_pins: SessionPins  # conversation -> provider holding its prompt cache (R-EXE-6)
    warm_targets: SessionPins  # session|virtual -> the target whose cache is warm (R-EXE-6)
    tier_pins: InProcessTierPins
    sharing: SharedState | None  # None without REDIS_URL: the stores stay per process


_stores: _SharedStores | None = None


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
        spool = TraceSpool(settings.TRACE_SPOOL_DIR, max_bytes=settings.TRACE_SPOOL_MB << 20)
        _writer = TraceWriter(
            flush_s=settings.GATEWAY.trace_flush_s, run_sync=in_db_thread, spool=spool
        )
    return _writer


def _new_live_metrics() -> LiveMetrics:
    return LiveMetrics(
        health_window_s=settings.GATEWAY.health_window_s,
        unhealthy_errors=settings.GATEWAY.unhealthy_errors,
        # a rollup this old means the rollup stopped: this worker's own window then
        fleet_stale_s=max(10.0, 4 * settings.LIVE_ROLLUP_S),
    )


def live() -> LiveMetrics:
    """This worker's live metrics, merged with every worker's rollup (R-OBS-2)."""
    global _live
    if _live is None:
        _live = _new_live_metrics()
    return _live


def credential_live() -> LiveMetrics:
    """The same per workspace's own credential (`routing.engine.live.credential_series`):
    apart from `live()`, so the router and the providers' numbers never count an attempt
    twice; shown to its workspace only (R-BEY-7)."""
    global _credential_live
    if _credential_live is None:
        _credential_live = _new_live_metrics()
    return _credential_live


def _create_stores() -> _SharedStores:
    stores = _SharedStores(
        cooldowns=Cooldowns(
            base_s=settings.GATEWAY.cooldown_base_s, max_s=settings.GATEWAY.cooldown_max_s
        ),
        session_pins=SessionPins(),
        cache_pins=SessionPins(ttl_s=CACHE_PIN_TTL_S),
        warm_targets=SessionPins(ttl_s=WARM_CACHE_TTL_S),
        tier_pins=InProcessTierPins(),
        sharing=SharedState(
            settings.REDIS_URL, settings.SHARED_STATE_PREFIX, cluster=settings.REDIS_CLUSTER
        )
        if settings.REDIS_URL
        else None,
    )
    if stores.sharing is not None:
        stores.sharing.share_cooldowns(stores.cooldowns)
        stores.sharing.share_session_pins("session", stores.session_pins)
        stores.sharing.share_session_pins("cache", stores.cache_pins)
        stores.sharing.share_session_pins("warm", stores.warm_targets)
        stores.sharing.share_tier_pins(stores.tier_pins)
        stores.sharing.on_config_change(lambda: snapshots().check_now())
    return stores


def _shared_stores() -> _SharedStores:
    global _stores
    if _stores is None:
        _stores = _create_stores()
    if _stores.sharing is not None and not _stores.sharing.running:
        _stores.sharing.start_soon()  # first use without the ASGI lifespan (a no-op off-loop)
    return _stores


async def start_sharing() -> None:
    """ASGI start-up: subscribe and load the other replicas' state (bounded wait)."""
    sharing = _shared_stores().sharing
    if sharing is not None:
        await sharing.start()


async def stop_sharing() -> None:
    if _stores is not None and _stores.sharing is not None:
        await _stores.sharing.stop()


def cooldowns() -> Cooldowns:
    """Endpoint cooldowns: learnt per node (GM), started ones shared between replicas."""
    return _shared_stores().cooldowns


def session_pins() -> SessionPins:
    """Session -> endpoint pins (R-EXE-7), shared between replicas."""
    return _shared_stores().session_pins


def cache_pins() -> SessionPins:
    """Conversation -> provider pins after a prompt-cache read (R-EXE-6), shared."""
    return _shared_stores().cache_pins


def warm_targets() -> SessionPins:
    """Session|virtual model -> its warm target (R-EXE-6), shared."""
    return _shared_stores().warm_targets


def adaptive() -> AdaptiveState:
    """Latency estimates and in-flight counts per model for the adaptive strategy."""
    return _adaptive


def tier_pins() -> InProcessTierPins:
    """Upward-only tier pins per alias and session (R-TIER-3), shared between replicas."""
    return _shared_stores().tier_pins


def round_robin_turns() -> dict[str, int]:
    """A copy of the turn each round-robin virtual model of this worker is at (0, 1, …)."""
    return dict(_round_robin)


def take_round_robin_turns(aliases: list[str]) -> None:
    """Advance each alias one turn per mention (a request's chain took them)."""
    for alias in aliases:
        _round_robin[alias] = _round_robin.get(alias, 0) + 1


def client() -> httpx.AsyncClient:
    return get_client(settings.GATEWAY.upstream_pool_size)


def reset() -> None:
    """Forget the singletons (tests that change configuration in-process)."""
    global _holder, _writer, _live, _credential_live, _stores, _adaptive
    if _stores is not None and _stores.sharing is not None:
        _stores.sharing.close()
    _stores = None
    _adaptive = AdaptiveState()
    admission_state.reset()
    _holder = None
    _writer = None
    _live = None
    _credential_live = None
    _round_robin.clear()
