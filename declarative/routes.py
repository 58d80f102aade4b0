"""Validation of a workspace's `routes:` section (SPEC R-ROUTE-1, CONFIG.md): each route is
validated whole by the engine's own `parse_route` — the one definition of a route's shape
— and every problem is reported with its path in the file
(`workspaces[0].routes[0].nodes.split.branches[1].next: unknown node 'canry'`). What is
stored is the route as written; `apply` saves it as a new version when it changed.
Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping

from declarative.fields import Fields, check_unique, is_json
from declarative.types import RouteSpec
from routing.engine.resolve import CatalogNames
from routing.engine.routes import RouteInvalid, parse_route


def parse_routes(workspace: Fields, catalog: CatalogNames) -> tuple[RouteSpec, ...]:
    specs = []
    for path, raw in workspace.items("routes", default=()):
        if not isinstance(raw, Mapping) or not is_json(raw):
            workspace.issues.add(path, "must be a mapping of JSON values (see CONFIG.md)")
            continue
        try:
            route = parse_route(raw, path=path, catalog=catalog)
        except RouteInvalid as invalid:
            for problem in invalid.problems:
                workspace.issues.add(problem.path, problem.message)
            continue
        specs.append(RouteSpec(slug=route.slug, content=dict(raw)))
    slugs = [(f"{workspace.at('routes')}[{i}].slug", s.slug) for i, s in enumerate(specs)]
    check_unique(workspace.issues, slugs)
    return tuple(specs)
