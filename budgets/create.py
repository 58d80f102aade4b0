"""Which stores a worker admits requests with (ARCHITECTURE "State"): Redis when
`REDIS_URL` is set — budgets and rate limits the same on every replica; without Redis,
budgets in the database when it is PostgreSQL (shared by every worker) and in this
process on SQLite (the embedded default, one process), rate limits in this process.
`SWITCHYARD_ADMISSION_STORE` (`redis`, `database`, `memory`) overrides the choice; with
`SWITCHYARD_REDIS_CLUSTER` set, REDIS_URL names one node of a Redis Cluster."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from budgets.admitter import Admitter, StoreAdmitter
from budgets.alerts import Alerts
from budgets.redis.admitter import RedisAdmitter
from budgets.redis.limits import RedisLimiter
from budgets.redis.store import RedisBudgetStore, shared_client
from budgets.rules.allowance import ALLOWANCE_REQUESTS
from budgets.stores.budget_store import BudgetStore, MemoryBudgetStore
from budgets.stores.database import DatabaseBudgetStore
from budgets.stores.ledger import Ledger
from budgets.stores.limit_store import LimitStore, MemoryLimiter

STORE_KINDS = ("auto", "redis", "database", "memory")


@dataclass(frozen=True, slots=True)
class AdmissionStores:
    kind: str  # redis | database | memory: where budgets live
    ledger: Ledger
    budgets: BudgetStore
    limits: LimitStore
    admitter: Admitter  # takes and gives back both at once


def choose_kind(configured: str, redis_url: str, database_vendor: str) -> str:
    if configured not in STORE_KINDS:
        raise ValueError(f"SWITCHYARD_ADMISSION_STORE must be one of {', '.join(STORE_KINDS)}")
    if configured != "auto":
        return configured
    if redis_url:
        return "redis"
    return "database" if database_vendor == "postgresql" else "memory"


def create_stores(
    kind: str,
    *,
    redis_url: str,
    prefix: str,
    lease_ttl_s: float,
    run_sync: Callable[[Callable[..., Any]], Any],
    flush_s: float,
    count_alert: Callable[[str, str], None],
    allowance_requests: int = ALLOWANCE_REQUESTS,
    cluster: bool = False,
) -> AdmissionStores:
    """`prefix` names this installation's Redis keys; `lease_ttl_s` outlives any request;
    `allowance_requests` sizes a worker's allowances on Redis (0: none; allowance.py);
    `cluster`: `redis_url` is a node of a Redis Cluster; `count_alert(budget, threshold)`
    counts a budget alert fired (alerts.py)."""
    if allowance_requests < 0:
        raise ValueError("SWITCHYARD_ALLOWANCE_REQUESTS is a number of requests, 0 or more")
    ledger = Ledger(flush_s=flush_s, run_sync=run_sync)
    alerts = Alerts(run_sync, count_alert)
    if kind == "redis":
        if not redis_url:
            raise ValueError("SWITCHYARD_ADMISSION_STORE=redis needs REDIS_URL")
        if cluster and ("{" in prefix or "}" in prefix):  # the workspaces' tags come first
            raise ValueError("SWITCHYARD_SHARED_STATE_PREFIX must not hold { or } on a cluster")
        client = shared_client(redis_url, cluster=cluster)  # the stores' and the admitter's
        in_redis = RedisBudgetStore(client, ledger, prefix)
        limiter = RedisLimiter(client, prefix=prefix, lease_ttl_s=lease_ttl_s)
        admitter = RedisAdmitter(limiter, in_redis, client, alerts, allowance_requests)
        return AdmissionStores(kind, ledger, in_redis, limiter, admitter)
    budgets: BudgetStore
    budgets = DatabaseBudgetStore(run_sync) if kind == "database" else MemoryBudgetStore(ledger)
    limits = MemoryLimiter(lease_ttl_s=lease_ttl_s)
    return AdmissionStores(kind, ledger, budgets, limits, StoreAdmitter(limits, budgets, alerts))
