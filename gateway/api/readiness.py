"""The probes, one question each (docs/deployment.md, "Probes"):

- `/livez`: the process answers. No dependency is asked, so a database or Redis outage
  never makes an orchestrator restart workers that would serve the snapshot they hold.
- `/readyz`: the worker can route: its configuration snapshot is loaded (loading it on
  the first call), and it is not draining (gateway/drain.py). A load balancer sends
  traffic only to ready workers.
- `/healthz`: the dependencies answer — the database, Redis when configured, and the store
  budgets and rate limits live in (docs/budgets.md); while that store does not, every
  request a budget or limit applies to is refused with 503 `budget_store_unavailable`."""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any

import orjson
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse

from gateway import drain
from gateway.state import admission_state, request_state
from gateway.state.db_thread import in_db_thread


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


def health_client_name() -> str:
    """What `CLIENT LIST` on Redis shows for a worker's health checks: its pid says whose."""
    return f"switchyard-healthz-{os.getpid()}"


# One client per event loop and Redis: a probe every few seconds reuses its connection
# instead of opening one each call. Keyed by the loop, since a client's connections
# belong to the loop that opened them.
_health_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
    weakref.WeakKeyDictionary()
)


def _health_client(url: str, cluster: bool) -> Any:
    import redis.asyncio as redis

    clients = _health_clients.setdefault(asyncio.get_running_loop(), {})
    if (url, cluster) not in clients:
        options: dict[str, Any] = {
            "socket_connect_timeout": 1,
            "socket_timeout": 1,
            "client_name": health_client_name(),
        }
        connect = redis.RedisCluster.from_url if cluster else redis.from_url
        clients[url, cluster] = connect(url, **options)
    return clients[url, cluster]


async def _redis_ok(url: str, cluster: bool) -> bool:
    """Redis answers: on a cluster, every master (each holds some workspaces' budgets)."""
    import redis.asyncio as redis

    ping = {"target_nodes": redis.RedisCluster.PRIMARIES} if cluster else {}
    try:
        return bool(await _health_client(url, cluster).ping(**ping))
    except Exception:
        return False


async def healthz(request: HttpRequest) -> HttpResponse:
    checks = {"database": await in_db_thread(_database_ok)()}
    if settings.REDIS_URL:
        checks["redis"] = await _redis_ok(settings.REDIS_URL, settings.REDIS_CLUSTER)
    store = admission_state.stores().kind
    checks["budget_store"] = {
        "redis": checks.get("redis", False),
        "database": checks["database"],
    }.get(store, True)
    healthy = all(checks.values())
    body = {"status": "ok" if healthy else "unavailable", "checks": checks, "budget_store": store}
    return HttpResponse(
        orjson.dumps(body), status=200 if healthy else 503, content_type="application/json"
    )


def _json(body: dict[str, object], healthy: bool) -> HttpResponse:
    return HttpResponse(
        orjson.dumps(body), status=200 if healthy else 503, content_type="application/json"
    )


async def livez(request: HttpRequest) -> HttpResponse:
    return _json({"status": "ok"}, True)


async def readyz(request: HttpRequest) -> HttpResponse:
    if drain.current.draining():  # the server is stopping: send new requests elsewhere
        return _json({"status": "draining"}, False)
    try:
        snapshot = await request_state.current_snapshot()
    except Exception:
        return _json({"status": "unavailable", "reason": "configuration not loaded"}, False)
    return _json({"status": "ok", "configuration_version": snapshot.version}, True)
