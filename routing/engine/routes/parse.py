"""A route's raw mapping → a validated `Route`, or every problem with its path (SPEC
R-ROUTE-1, D-23, D-26; CONFIG.md "Keys, limits, budgets and dynamic routes").

`parse_route` validates the route whole: its top-level keys, each node (routing.engine.routes
.nodes), then the graph its exits make — no cycle, every node reachable from `start` — and
the rollout guard's nodes. Nothing stops at the first problem: `RouteInvalid.problems` lists
each one, sorted by path, as `apply` prints them
(`workspaces[0].routes[0].nodes.split.branches[1].next: unknown node 'canry'`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from routing.engine.resolve import CatalogNames
from routing.engine.routes.fields import Fields, Problem, RouteInvalid, is_slug, join
from routing.engine.routes.graph import (
    DEFAULT_MODELS,
    GUARD_INTERVAL_S,
    GUARD_WINDOW_S,
    NODE_TYPES,
    Node,
    RolloutGuard,
    Route,
)
from routing.engine.routes.nodes import NODE_KEYS, READERS, Edge, Reading

# Re-exported: the errors are part of parse_route's contract.
__all__ = ["Problem", "RouteInvalid", "parse_route"]

ROUTE_KEYS = ("slug", "description", "models", "start", "nodes", "rollout_guard")
GUARD_KEYS = (
    "node",
    "baseline",
    "min_requests",
    "max_error_rate_delta",
    "max_p99_ratio",
    "max_cost_ratio",
    "window_s",
    "interval_s",
)
GUARD_BOUNDS = ("max_error_rate_delta", "max_p99_ratio", "max_cost_ratio")


def parse_route(data: Mapping[str, Any], *, path: str, catalog: CatalogNames) -> Route:
    """The route at `path` (`workspaces[0].routes[0]`, or "" for paths relative to the
    route). Raises RouteInvalid with every problem found; model names are stored as
    canonical slugs (or `requested`, `auto`, a virtual model), `usd` as micro-dollars."""
    problems: list[Problem] = []
    f = Fields(data, path, problems, ROUTE_KEYS)
    slug = f.slug("slug", required=True)
    description = f.get("description")
    if description is not None and not isinstance(description, str):
        f.error("description", "must be a string")
    patterns = f.strings("models")
    nodes, reading, all_read = _read_nodes(f, catalog)
    start = f.text("start", required=True)
    if start is not None and reading.ids and start not in reading.ids:  # a node may be invalid
        f.error("start", f"unknown node {start!r}")
        start = None
    _report_cycles(reading.edges, start, reading.ids, problems)
    # Reachability needs every node's exits; a node whose type is unknown has none known.
    reachable = _reachable(reading.edges, start) if start is not None and all_read else None
    for node_id in sorted(reading.ids - reachable) if reachable is not None else ():
        problems.append(Problem(join(f.at("nodes"), node_id), f"unreachable from start {start!r}"))
    guard = _read_guard(f, reading.ids, reachable, start)
    if problems or slug is None or start is None or nodes is None:
        raise RouteInvalid(problems or [Problem(path, "is invalid")])
    return Route(
        slug=slug,
        start=start,
        nodes=nodes,
        description=description or "",
        models=tuple(patterns) if patterns else DEFAULT_MODELS,
        rollout_guard=guard,
    )


def _read_nodes(f: Fields, catalog: CatalogNames) -> tuple[dict[str, Node] | None, Reading, bool]:
    """(the nodes, None when any is invalid; the reading with its edges; whether every
    node's type was known, so that its exits are)."""
    raw = f.get("nodes")
    if not f.present("nodes", True) or not isinstance(raw, Mapping) or not raw:
        if f.has("nodes"):
            f.error("nodes", "must be a non-empty mapping of node id to node")
        return None, Reading(frozenset(), catalog, f.problems), False
    ids = frozenset(key for key in raw if isinstance(key, str))
    reading = Reading(ids, catalog, f.problems)
    nodes: dict[str, Node] = {}
    all_read = True
    for key, value in raw.items():
        at = join(f.at("nodes"), str(key))
        if not isinstance(key, str) or not is_slug(key):
            f.problems.append(Problem(at, "a node id must be a slug (letters, digits, '-', '_')"))
        kind = value.get("type") if isinstance(value, Mapping) else None
        if kind not in NODE_TYPES:
            all_read = False
            if not isinstance(value, Mapping):
                f.problems.append(Problem(at, "must be a mapping"))
            elif kind is None:
                f.problems.append(Problem(join(at, "type"), "is required"))
            else:
                known = ", ".join(NODE_TYPES)
                f.problems.append(
                    Problem(join(at, "type"), f"unknown node type {kind!r} (one of {known})")
                )
            continue
        node = READERS[kind](Fields(value, at, f.problems, NODE_KEYS[kind]), str(key), reading)
        if node is not None and isinstance(key, str):
            nodes[key] = node
    return (nodes if len(nodes) == len(raw) else None), reading, all_read


def _adjacency(edges: Sequence[Edge]) -> dict[str, list[Edge]]:
    out: dict[str, list[Edge]] = {}
    for edge in edges:
        out.setdefault(edge.source, []).append(edge)
    return out


def _report_cycles(
    edges: Sequence[Edge], start: str | None, ids: frozenset[str], problems: list[Problem]
) -> None:
    """One problem per exit that closes a cycle, at that exit's path, naming the cycle.
    Depth-first from `start`, then from each other node in id order, so the report does not
    depend on how the mapping was ordered; iterative, so a long chain cannot overflow."""
    after = _adjacency(edges)
    done: set[str] = set()
    roots = ([start] if start is not None else []) + sorted(ids)
    for root in roots:
        if root in done:
            continue
        trail: list[str] = [root]  # the path being explored; a target on it closes a cycle
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            node, index = stack[-1]
            out = after.get(node, [])
            if index == len(out):
                stack.pop()
                trail.pop()
                done.add(node)
                continue
            stack[-1] = (node, index + 1)
            edge = out[index]
            if edge.target in trail:
                cycle = [*trail[trail.index(edge.target) :], edge.target]
                problems.append(Problem(edge.path, f"makes a cycle: {' → '.join(cycle)}"))
            elif edge.target not in done:
                trail.append(edge.target)
                stack.append((edge.target, 0))


def _reachable(edges: Sequence[Edge], start: str) -> frozenset[str]:
    after = _adjacency(edges)
    seen, todo = {start}, [start]
    while todo:
        for edge in after.get(todo.pop(), []):
            if edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return frozenset(seen)


def _read_guard(
    route: Fields, ids: frozenset[str], reachable: frozenset[str] | None, start: str | None
) -> RolloutGuard | None:
    """D-26: the watched node and its baseline must exist, differ and be reachable."""
    if not route.present("rollout_guard", False):
        return None
    f = Fields(route.get("rollout_guard"), route.at("rollout_guard"), route.problems, GUARD_KEYS)
    mark = len(f.problems)
    watched, baseline = f.text("node", required=True), f.text("baseline", required=True)
    for key, node_id in (("node", watched), ("baseline", baseline)):
        if node_id is not None and node_id not in ids:
            f.error(key, f"unknown node {node_id!r}")
        elif node_id is not None and reachable is not None and node_id not in reachable:
            f.error(key, f"node {node_id!r} is not reachable from start {start!r}")
    if watched is not None and watched == baseline:
        f.error("baseline", "must differ from node")
    min_requests = f.integer("min_requests", minimum=1, required=True)
    error_delta = f.number("max_error_rate_delta", above_zero=False)
    p99_ratio = f.number("max_p99_ratio", above_zero=True)
    cost_ratio = f.number("max_cost_ratio", above_zero=True)
    if not f.broken and not any(f.present(key, False) for key in GUARD_BOUNDS):
        f.problems.append(Problem(f.path, f"needs at least one of {', '.join(GUARD_BOUNDS)}"))
    window_s = f.integer("window_s", minimum=1)
    interval_s = f.integer("interval_s", minimum=1)
    if watched is None or baseline is None or min_requests is None or len(f.problems) > mark:
        return None
    return RolloutGuard(
        watched,
        baseline,
        min_requests,
        error_delta,
        p99_ratio,
        cost_ratio,
        window_s or GUARD_WINDOW_S,
        interval_s or GUARD_INTERVAL_S,
    )
