"""`/healthz`: liveness and readiness (the database answers; Redis too when configured)."""

from __future__ import annotations

import orjson
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse

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
    healthy = all(checks.values())
    body = {"status": "ok" if healthy else "unavailable", "checks": checks}
    return HttpResponse(
        orjson.dumps(body), status=200 if healthy else 503, content_type="application/json"
    )
