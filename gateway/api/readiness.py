"""`/healthz`: liveness and readiness (the database answers; Redis too when configured),
and whether budgets and rate limits can be checked: the store they live in
(docs/budgets.md) answers — while it does not, every request a budget or limit applies to
is refused with 503 `budget_store_unavailable`."""

from __future__ import annotations

import orjson
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse

from gateway.state import admission_state
from gateway.state.db_thread import in_db_thread


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


async def _redis_ok(url: str) -> bool:
    import redis.asyncio as redis

    client = redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        return bool(await client.ping())
    except Exception:
        return False
    finally:
        await client.aclose()


async def healthz(request: HttpRequest) -> HttpResponse:
    checks = {"database": await in_db_thread(_database_ok)()}
    if settings.REDIS_URL:
        checks["redis"] = await _redis_ok(settings.REDIS_URL)
    store = admission_state.stores().kind
    checks["budget_store"] = {"redis": checks.get("redis", False),
                              "database": checks["database"]}.get(store, True)  # fmt: skip
    healthy = all(checks.values())
    body = {"status": "ok" if healthy else "unavailable", "checks": checks,
            "budget_store": store}  # fmt: skip
    return HttpResponse(
        orjson.dumps(body), status=200 if healthy else 503, content_type="application/json"
    )
