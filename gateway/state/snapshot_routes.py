"""Reading the deployed version of every route into the snapshot (SPEC R-ROUTE-2): one
query, each version's content validated again by the engine's `parse_route` against the
snapshot's catalog, so the request path walks a value it never has to check. Synchronous;
called by `load_snapshot` inside its transaction.
"""

from __future__ import annotations

import logging

from budgets.rules.route_usage import usage_periods
from gateway.state.snapshot_types import DeployedRoute
from presets.models import Route
from routing.engine.resolve import CatalogNames
from routing.engine.routes import RouteInvalid, parse_route

log = logging.getLogger(__name__)


def load_routes(catalog: CatalogNames) -> dict[int, dict[str, DeployedRoute]]:
    """Deployed routes by workspace id, then slug."""
    routes: dict[int, dict[str, DeployedRoute]] = {}
    for row in Route.objects.filter(deployed__isnull=False).select_related("deployed"):
        version = row.deployed
        assert version is not None
        try:
            route = parse_route(version.content, path="", catalog=catalog)
            entry = DeployedRoute(row.slug, version.number, route, "", usage_periods([route]))
        except RouteInvalid as invalid:
            problem = "; ".join(str(p) for p in invalid.problems)
            log.error("route %s v%s no longer validates: %s", row.slug, version.number, problem)
            entry = DeployedRoute(row.slug, version.number, None, problem)
        routes.setdefault(row.workspace_id, {})[row.slug] = entry
    return routes
