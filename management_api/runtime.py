"""What the management API reads of the gateway's runtime, all here: the budget store's
counters and the limit store's usage (this process's stores, the ones the gateway admits
with: Redis, the database, or this process on SQLite), the live health of a workspace's
BYOK credentials (what `/health` shows), and the configuration the gateway routes with
(for replay). The views are sync: each read runs on the event loop (under ASGI, the
worker's own, where the stores' Redis clients live)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from asgiref.sync import async_to_sync

from budgets.models import RateLimit
from budgets.rules.holds import BudgetStoreUnavailable, CounterState
from budgets.rules.limits import LimitStoreUnavailable, LimitUse
from gateway.errors import ApiError
from gateway.state import admission_state, request_state
from gateway.state.snapshot import Snapshot, load_snapshot
from gateway.state.snapshot_budgets import limit_spec


def configuration() -> Snapshot:
    """Today's catalog, workspaces and keys as the gateway routes with them, freshly
    loaded from the database (a replay reads it once)."""
    return load_snapshot()


def credentials_health(workspace_id: int, providers: Iterable[str]) -> dict[str, dict[str, object]]:
    """{provider: health} of the workspace's own credentials, as `/health` shows them."""
    return request_state.credentials_health(workspace_id, providers, time.time())


def read_counters(counters: Sequence[str]) -> dict[str, CounterState]:
    """The counters' state in this process's store. The view is sync: the read runs on
    the event loop (under ASGI, the worker's own, where the store's Redis client lives)."""

    async def read() -> dict[str, CounterState]:
        return await admission_state.stores().budgets.read(counters)

    try:
        return async_to_sync(read)()
    except BudgetStoreUnavailable as error:
        raise ApiError(
            503,
            "Budget spending cannot be read right now; try again.",
            code="budget_store_unavailable",
            headers={"Retry-After": "1"},
        ) from error


def read_limit_usage(
    rows: Sequence[RateLimit], now: float
) -> dict[str, dict[str, LimitUse]] | None:
    """{key name ("" for the workspace): {kind: in use}}, or None when the store cannot
    answer. One read for every scope; none when nothing is limited."""
    specs = [limit_spec(row) for row in rows]
    if not specs:
        return {}
    names = {spec.scope: row.key_name for spec, row in zip(specs, rows, strict=True)}

    async def read() -> list[LimitUse]:
        return await admission_state.stores().limits.usage(specs, now=now)

    try:
        found = async_to_sync(read)()
    except LimitStoreUnavailable:
        return None
    uses: dict[str, dict[str, LimitUse]] = {}
    for use in found:
        uses.setdefault(names[use.scope], {})[use.kind.value] = use
    return uses
