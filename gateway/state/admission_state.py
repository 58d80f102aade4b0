"""The process's budget and rate-limit stores and its spending ledger (budgets/create.py
picks them), created on first use inside the event loop; written out and closed
at shutdown."""

from __future__ import annotations

from django.conf import settings
from django.db import connection

from budgets.create import AdmissionStores, choose_kind, create_stores
from budgets.settling import drain
from gateway import metrics
from gateway.state.db_thread import in_db_thread

_stores: AdmissionStores | None = None


def stores() -> AdmissionStores:
    global _stores
    if _stores is None:
        kind = choose_kind(settings.ADMISSION_STORE, settings.REDIS_URL, connection.vendor)
        _stores = create_stores(
            kind,
            redis_url=settings.REDIS_URL,
            prefix=settings.SHARED_STATE_PREFIX,
            lease_ttl_s=settings.GATEWAY.total_timeout_s + 60,
            run_sync=in_db_thread,
            flush_s=settings.GATEWAY.trace_flush_s,
            count_alert=_count_alert,
            allowance_requests=settings.ALLOWANCE_REQUESTS,
            cluster=settings.REDIS_CLUSTER,
        )
    return _stores


def _count_alert(budget: str, threshold: str) -> None:
    metrics.BUDGET_ALERTS.labels(budget, threshold).inc()


async def stop() -> None:
    """ASGI shutdown: settlements under way finish, the ledger is written, Redis closed."""
    if _stores is None:
        return
    await drain()
    await _stores.admitter.aclose()  # (a worker's allowances settle: allowance.py)
    await _stores.ledger.flush()
    client = getattr(_stores.budgets, "client", None)  # Redis: the stores' and the admitter's
    if client is not None:
        await client.aclose()


def reset() -> None:
    """Forget the stores (tests that change configuration in-process)."""
    global _stores
    _stores = None
