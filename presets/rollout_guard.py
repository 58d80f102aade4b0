"""The rollout guard (SPEC R-BEY-4, D-26): each deployed route version with a
`rollout_guard` has its watched node's traffic compared with its baseline node's over the
last `window_s` — error rate, p99 latency, cost per request, from the traces — and when a
bound is breached after `min_requests` on both sides the previous version is deployed
again, with an audit event carrying every number compared; the caller counts what it
returns (the gateway's Prometheus count, gateway/scheduler.py `guard_rollouts`).

`check_rollout_guards` is one pass over every guarded route. Celery beat runs it in
production (gateway/tasks.py); the embedded default runs it on the gateway's in-process
scheduler (gateway/scheduler.py), every `SWITCHYARD_ROLLOUT_GUARD_INTERVAL_S` seconds
(default 30, D-26). Each route is judged at most once per its own `interval_s`. Two
processes judging the same route at once cannot roll it back twice: the rollback happens
only while the version judged is still the deployed one.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import Count, Q, QuerySet, Sum

from audit.models import RequestTrace
from presets.catalog import catalog_names
from presets.models import Route
from presets.services import RouteError, rollback_route
from routing.engine.routes import RolloutGuard as Guard
from routing.engine.routes import RouteInvalid, WindowStats, guard_verdict, parse_route

log = logging.getLogger(__name__)

ACTOR = "rollout-guard"
ERROR_STATUS = 500  # statuses from here up count as errors; a client's 4xx does not
_last_judged: dict[tuple[int, int], float] = {}  # (route id, version id) -> when


@dataclass(frozen=True, slots=True)
class RolledBack:
    route: str
    version: int  # the version rolled back
    to: int  # the version now deployed
    reasons: tuple[str, ...]


def check_rollout_guards(now: float, *, interval_s: float | None = None) -> list[RolledBack]:
    """Judge every deployed, guarded route whose interval has passed (its own `interval_s`,
    or `interval_s` when given: SWITCHYARD_ROLLOUT_GUARD_INTERVAL_S); roll back those that
    breach. Synchronous (database queries); returns what was rolled back."""
    rolled = []
    for route in Route.objects.filter(deployed__isnull=False).select_related("deployed"):
        version = route.deployed
        assert version is not None
        guard = _guard_of(route)
        if guard is None:
            continue
        key = (route.pk, version.pk)
        if now - _last_judged.get(key, -math.inf) < (interval_s or guard.interval_s):
            continue
        _last_judged[key] = now
        done = _judge(route, guard, now)
        if done is not None:
            rolled.append(done)
    return rolled


def _guard_of(route: Route) -> Guard | None:
    content = route.deployed.content if route.deployed else {}
    if not content.get("rollout_guard"):
        return None
    try:
        return parse_route(content, path="", catalog=catalog_names()).rollout_guard
    except RouteInvalid:
        return None  # a version the catalog no longer accepts routes nothing to judge


def _judge(route: Route, guard: Guard, now: float) -> RolledBack | None:
    version = route.deployed
    assert version is not None
    since = datetime.fromtimestamp(now - guard.window_s, tz=UTC)
    watched = window_stats(route, version.number, guard.node, since)
    baseline = window_stats(route, version.number, guard.baseline, since)
    verdict = guard_verdict(guard, watched, baseline)
    if not verdict.breached:
        return None
    numbers = {
        **verdict.numbers,
        "watched": guard.node,
        "baseline": guard.baseline,
        "window_s": guard.window_s,
        "reasons": list(verdict.reasons),
    }
    try:
        back = rollback_route(
            route, actor=ACTOR, automatic=True, numbers=numbers, only_if_deployed=version.number
        )
    except RouteError as error:
        log.warning(
            "rollout guard: %s v%s breached (%s) but %s",
            route.slug,
            version.number,
            "; ".join(verdict.reasons),
            error,
        )
        return None
    if back.number == version.number:
        return None  # another process rolled it back first
    log.warning(
        "rollout guard rolled %s back from v%s to v%s: %s",
        route.slug,
        version.number,
        back.number,
        "; ".join(verdict.reasons),
    )
    return RolledBack(route.slug, version.number, back.number, verdict.reasons)


def window_stats(route: Route, version: int, node: str, since: datetime) -> WindowStats:
    """The traffic that ended at `node` of `route` v`version` since `since`. Route slugs
    are per workspace: another workspace's route of the same slug is not this one's."""
    rows = RequestTrace.objects.filter(
        workspace_id=route.workspace_id,
        route=route.slug,
        route_version=version,
        route_node=node,
        created_at__gte=since,
        purpose="",
    )
    totals = rows.aggregate(
        requests=Count("id"),
        errors=Count("id", filter=Q(status_code__gte=ERROR_STATUS)),
        cost=Sum("cost_micros"),
    )
    requests = totals["requests"] or 0
    return WindowStats(
        requests=requests,
        errors=totals["errors"] or 0,
        p99_ms=_p99(rows, requests),
        cost_micros=totals["cost"] or 0,
    )


def _p99(rows: QuerySet[RequestTrace], requests: int) -> float | None:
    """The 99th percentile of latency (nearest rank), read with one ordered query."""
    if requests == 0:
        return None
    rank = max(1, math.ceil(0.99 * requests))
    latencies = rows.order_by("latency_ms").values_list("latency_ms", flat=True)
    return float(latencies[rank - 1])
