"""Per-process singletons of the request path, created lazily inside the event loop:
the configuration snapshot holder, the upstream HTTP client and the trace writer."""

from __future__ import annotations

import httpx
from django.conf import settings

from audit.record import TraceWriter
from gateway.config import GatewaySettings
from gateway.snapshot import SnapshotHolder
from gateway.upstream_client import get_client

_holder: SnapshotHolder | None = None
_writer: TraceWriter | None = None


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


def client() -> httpx.AsyncClient:
    return get_client(settings.GATEWAY.upstream_pool_size)


def reset() -> None:
    """Forget the singletons (tests that change configuration in-process)."""
    global _holder, _writer
    _holder = None
    _writer = None
