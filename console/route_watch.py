"""What the route studio shows of a route at work (SPEC R-ROUTE-1, R-BEY-4): how the last
hour's requests ended across its nodes, and the rollout guard's live comparison and
history. Which keys attach a route is `KeySettings.objects.names_by_route()`, which replay
shares. Reads only; each function is one or two bounded queries over the trace indexes
((workspace, created_at) and (route, route_version, route_node, created_at)) or the audit log.

The guard panel compares with the guard's own `window_stats` and `guard_verdict`, so the
numbers a person reads are the ones the next guard pass will act on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, Min

from audit.models import AdminEvent, RequestTrace
from presets.models import Route, RouteVersion
from presets.rollout_guard import window_stats
from routing.engine.routes import GuardVerdict, RolloutGuard, guard_verdict
from workspaces.models import Workspace

TRAFFIC_WINDOW_S = 3600  # the list's "last hour"
# Traces counted per page load at most: the count costs in proportion to the rows it reads
# (150-180 ms for a full hour at 750k requests an hour), so a busier workspace is counted
# over its newest 20,000 of the hour (about 5 ms by the same measure; the page says so)
# rather than a route page that slows with its traffic. The Live page caps its reads at
# the same depth (console/live_views.MAX_ROWS).
TRAFFIC_MAX_TRACES = 20_000
GUARD_HISTORY = 20  # automatic rollbacks shown, newest first


@dataclass(frozen=True, slots=True)
class NodeShare:
    node: str
    requests: int
    percent: int  # of the route version's requests in the window, rounded


@dataclass(frozen=True, slots=True)
class NodeTraffic:
    by_version: dict[tuple[str, int], list[NodeShare]]  # (route, version): busiest node first
    counted: int  # requests counted, at most TRAFFIC_MAX_TRACES
    # When TRAFFIC_MAX_TRACES cut the hour short: the oldest request counted. None when the
    # whole hour was counted.
    counted_from: datetime | None


def node_traffic(workspace: Workspace, now: float, routes: Iterable[str]) -> NodeTraffic:
    """The nodes the requests of the last hour ended at, by (route, version), busiest first:
    over the newest TRAFFIC_MAX_TRACES of the hour when there were more. Asked by route
    slug, so a busy workspace's hour of traffic is not read for the few routes it has."""
    since = datetime.fromtimestamp(now - TRAFFIC_WINDOW_S, tz=UTC)
    rows = RequestTrace.objects.filter(
        workspace=workspace, created_at__gte=since, purpose="", route__in=list(routes)
    )
    # The newest ones by the workspace's (created_at, id) index, as the live page reads them.
    newest = rows.order_by("-created_at", "-id").values("id")[:TRAFFIC_MAX_TRACES]
    counts = (
        RequestTrace.objects.filter(id__in=newest)
        .values_list("route", "route_version", "route_node")
        .annotate(n=Count("id"), oldest=Min("created_at"))
    )
    found: dict[tuple[str, int], list[tuple[str, int]]] = {}
    counted, oldest_counted = 0, None
    for route, version, node, n, oldest in counts:
        found.setdefault((route, version or 0), []).append((node, n))
        counted += n
        oldest_counted = oldest if oldest_counted is None else min(oldest, oldest_counted)
    by_version = {
        key: [
            NodeShare(node, n, round(100 * n / sum(c for _, c in nodes)))
            for node, n in sorted(nodes, key=lambda row: (-row[1], row[0]))
        ]
        for key, nodes in found.items()
    }
    # Exactly the cap counted: the hour may have held more, so say the count stops there.
    capped = counted >= TRAFFIC_MAX_TRACES
    return NodeTraffic(by_version, counted, oldest_counted if capped else None)


def version_status(version: RouteVersion, deployed: RouteVersion | None) -> str:
    """deployed, draft (newer than the deployed one, or nothing is deployed) or superseded."""
    if deployed is None or version.number > deployed.number:
        return "draft"
    return "deployed" if version.pk == deployed.pk else "superseded"


@dataclass(frozen=True, slots=True)
class GuardPanel:
    guard: RolloutGuard
    version: int
    verdict: GuardVerdict
    numbers: dict[str, Any]


def guard_panel(route: Route, guard: RolloutGuard | None, now: float) -> GuardPanel | None:
    """The deployed version's guard compared over its window now, as its next pass will."""
    if guard is None or route.deployed is None:
        return None
    version = route.deployed.number
    since = datetime.fromtimestamp(now - guard.window_s, tz=UTC)
    watched = window_stats(route, version, guard.node, since)
    baseline = window_stats(route, version, guard.baseline, since)
    verdict = guard_verdict(guard, watched, baseline)
    numbers = {
        "watched": watched,
        "baseline": baseline,
        "watched_error_pct": _percent(watched.errors, watched.requests),
        "baseline_error_pct": _percent(baseline.errors, baseline.requests),
        "max_error_points": None
        if guard.max_error_rate_delta is None
        else round(guard.max_error_rate_delta * 100, 2),
        "watched_cost_usd": _per_request_usd(watched.cost_micros, watched.requests),
        "baseline_cost_usd": _per_request_usd(baseline.cost_micros, baseline.requests),
    }
    return GuardPanel(guard, version, verdict, numbers)


def _percent(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def _per_request_usd(micros: int, requests: int) -> float | None:
    return micros / requests / 1_000_000 if requests else None


def guard_history(route: Route) -> list[AdminEvent]:
    """The rollout guard's automatic rollbacks of `route`, newest first, with the numbers
    each compared (their audit events, R-BEY-4)."""
    events = AdminEvent.objects.filter(
        workspace_id=route.workspace_id,
        action="route.guard_rollback",
        target__startswith=f"{route.slug} v",
    )
    return list(events.order_by("-created_at", "-id")[:GUARD_HISTORY])
