"""The live-metric rollup (SPEC R-OBS-2, R-API-8, D-31): every worker hands in what it
observed since its last tick as a slice; the rollup merges the last five minutes of every
worker's slices into one window per endpoint and writes them to `EndpointStats`, which
every worker's router reads back (gateway/state/live_sharing.py). The workspaces' own
credentials (BYOK) have series of their own, rolled up the same way into a fleet of their
own (`<prefix>:credentials`, rows named `ws:<workspace id>/<provider>`), so an endpoint's
rows never count a credential's attempts twice and the router never reads them.

Slices live in Redis when there is one (a sorted set by time; replicas share it) and in
the `LiveSlice` table otherwise (the embedded default, where the workers of one machine
share the database). Celery beat runs `roll_up` in production; without a broker each
worker runs it on its tick — twice is harmless, each run writes the whole window.
Synchronous: it runs in a Celery task or in the gateway's database thread."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
from django.conf import settings
from django.db import transaction

from routing.engine.live import WINDOW_S, Fleet
from routing.engine.live_slices import Slice, merge_slices
from routing.engine.live_window import Window
from routing.live_models import EndpointStats, LiveSlice

KEEP_S = WINDOW_S + 60  # slices are kept a minute past the window: a late tick still counts
ENDPOINTS = "endpoints"  # the router's series, one per endpoint
CREDENTIALS = "credentials"  # one per workspace's own provider key (BYOK, R-BEY-7)
SERIES = (ENDPOINTS, CREDENTIALS)


class SliceStore(Protocol):
    fleet: str  # the workers sharing this store: one SWITCHYARD_SHARED_STATE_PREFIX

    def push(self, piece: Slice) -> None: ...
    def since(self, start: float) -> list[Slice]: ...
    def trim(self, before: float) -> None: ...


class DatabaseSlices:
    """Slices in the `LiveSlice` table: one row per worker tick."""

    def __init__(self, fleet: str) -> None:
        self.fleet = fleet

    def push(self, piece: Slice) -> None:
        LiveSlice.objects.create(
            fleet=self.fleet, end=piece.end, payload=orjson.loads(piece.dumps())
        )

    def since(self, start: float) -> list[Slice]:
        rows = LiveSlice.objects.filter(fleet=self.fleet, end__gt=start)
        return [Slice.loads(orjson.dumps(p)) for p in rows.values_list("payload", flat=True)]

    def trim(self, before: float) -> None:
        LiveSlice.objects.filter(fleet=self.fleet, end__lt=before).delete()


class RedisSlices:
    """Slices in one Redis sorted set scored by their end (each member names its worker
    and end, so no two are equal)."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.client, self.key, self.fleet = client, f"{prefix}:live:slices", prefix

    def push(self, piece: Slice) -> None:
        self.client.zadd(self.key, {piece.dumps(): piece.end})

    def since(self, start: float) -> list[Slice]:
        members = self.client.zrangebyscore(self.key, f"({start}", "+inf")
        return [Slice.loads(raw) for raw in members]

    def trim(self, before: float) -> None:
        self.client.zremrangebyscore(self.key, "-inf", f"({before}")


def fleet_of(prefix: str, series: str) -> str:
    """The fleet name of `series` for the workers sharing `prefix`: the endpoints' is the
    prefix itself (as it was before there were other series), each other one's its own."""
    return prefix if series == ENDPOINTS else f"{prefix}:{series}"


@functools.cache
def slice_store(series: str = ENDPOINTS) -> SliceStore:
    """Redis when configured (replicas share it), else the database; one per series."""
    fleet = fleet_of(settings.SHARED_STATE_PREFIX, series)
    if not settings.REDIS_URL:
        return DatabaseSlices(fleet)
    return RedisSlices(_redis(settings.REDIS_URL, settings.REDIS_CLUSTER), fleet)


@functools.cache
def _redis(url: str, cluster: bool) -> Any:
    """One client (and connection pool) for every series' store; each series is one key,
    on one master of a Redis Cluster."""
    from redis import Redis, RedisCluster

    connect = RedisCluster.from_url if cluster else Redis.from_url
    return connect(url, socket_connect_timeout=1, socket_timeout=2)


def roll_up(store: SliceStore, now: float) -> int:
    """Write the five minutes before `now` to `EndpointStats`; returns how many series
    (endpoints, or credentials) have a row."""
    windows, included = merge_slices(store.since(now - WINDOW_S))
    computed_at = datetime.fromtimestamp(now, UTC)
    rows = [
        _row(store.fleet, eid, provider, w, computed_at, included)
        for eid, (provider, w) in windows.items()
    ]
    kept = {"fleet", "endpoint", "id"}
    with transaction.atomic():
        mine = EndpointStats.objects.filter(fleet=store.fleet)
        mine.exclude(endpoint__in=list(windows)).delete()
        EndpointStats.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["fleet", "endpoint"],
            update_fields=[f.name for f in EndpointStats._meta.fields if f.name not in kept],
        )
    store.trim(now - KEEP_S)
    return len(rows)


def read_fleet(fleet: str, worker: str) -> Fleet | None:
    """The fleet's last rollup as this worker's router merges it; None before the first."""
    rows = list(EndpointStats.objects.filter(fleet=fleet))
    if not rows:
        return None
    newest = max(rows, key=lambda row: row.computed_at)
    windows = {row.endpoint: (row.provider, Window.from_json(row.window)) for row in rows}
    mine = newest.included.get(worker)
    return Fleet(
        windows=windows,
        mine_seq=None if mine is None else int(mine),
        at=newest.computed_at.timestamp(),
    )


def _row(
    fleet: str,
    endpoint_id: str,
    provider: str,
    window: Window,
    at: datetime,
    included: dict[str, int],
) -> EndpointStats:
    stats = window.stats()
    ttft = window.ttft_percentiles()
    return EndpointStats(
        fleet=fleet,
        endpoint=endpoint_id,
        provider=provider,
        computed_at=at,
        requests=window.samples,
        latency_p50_ms=stats.latency_p50_ms,
        latency_p90_ms=stats.latency_p90_ms,
        latency_p99_ms=stats.latency_p99_ms,
        ttft_p50_ms=ttft[0],
        ttft_p90_ms=ttft[1],
        ttft_p99_ms=ttft[2],
        throughput_tps=stats.throughput_tps,
        error_rate=stats.error_rate,
        reliability=None if stats.error_rate is None else 1 - stats.error_rate,
        rate_limited=window.rate_limited,
        geo_blocked=window.geo_blocked,
        window=window.to_json(),
        included=included,
    )
