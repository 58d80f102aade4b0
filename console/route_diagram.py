"""A dynamic route laid out as a diagram for the console's route studio: where each node's
box goes and what it says, and the curve and label of every exit — the values that
`console/_route_diagram.html` draws as an inline SVG. A node's column is its longest path
from `start`, so every exit points right; within a column nodes sit near the mean row of
their parents, so exits cross little. The same route always lays out the same way. Pure:
no Django, no I/O; traffic counts and diff marks come in as mappings.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import compress, pairwise

from console.route_words import branch_label, describe, percent, short_number
from routing.engine.routes.graph import Route, node_exits, node_type

BOX_W, BOX_H = 244, 80  # px: a title, two detail lines and a traffic line
COL_GAP, ROW_GAP, MARGIN = 96, 24, 12  # px; the column gap holds the exits' labels
PAD = 10  # px from a box's side to its text
# Characters that fit a line at route_diagram.css's sizes (12 px bold title beside the
# 10 px type word; 11 px details); the <title> tooltip keeps the full text.
TITLE_CHARS, DETAIL_CHARS = 20, 36
PORT_GAP, PORT_SPAN = 16, 56  # px between exits on one side, and the most they spread over


@dataclass(frozen=True, slots=True)
class Line:
    text: str
    x: int
    y: int  # the baseline
    kind: str  # its CSS class: node-title, node-type, node-detail, node-traffic, node-flags


@dataclass(frozen=True, slots=True)
class Box:
    id: str
    type: str  # `rate_limit`, as node_type names it
    x: int
    y: int
    w: int
    h: int
    phrases: tuple[str, ...]  # what the node does, unclipped: `by session`
    is_start: bool
    is_watched: bool  # the rollout guard's node
    is_baseline: bool  # the rollout guard's baseline
    traffic: int | None  # requests counted at this node; None when the caller gave none
    share_pct: float | None  # of the route's counted requests, one decimal
    mark: str  # "added", "changed", "removed" or ""

    @property
    def title(self) -> str:
        return _clip(self.id, TITLE_CHARS)

    @property
    def details(self) -> tuple[str, ...]:
        """One or two lines: one long phrase wraps at a space, then each is clipped."""
        phrases = self.phrases
        if len(phrases) == 1 and len(phrases[0]) > DETAIL_CHARS:
            cut = phrases[0].rfind(" ", 0, DETAIL_CHARS + 1)
            cut = cut if cut > 0 else DETAIL_CHARS
            phrases = (phrases[0][:cut], phrases[0][cut:].strip())
        return tuple(_clip(phrase, DETAIL_CHARS) for phrase in phrases[:2])

    @property
    def flags(self) -> tuple[str, ...]:
        """The words tagging the box: `start`, `watched`, `baseline`, then its diff mark."""
        on = (self.is_start, self.is_watched, self.is_baseline, self.mark)
        return tuple(compress(("start", "watched", "baseline", self.mark), on))

    @property
    def classes(self) -> str:
        """The node's <g> classes: `node node-<type>`, then `is-<flag>` and `mark-<mark>`."""
        on = (self.is_start, self.is_watched, self.is_baseline, self.mark)
        names = ("is-start", "is-watched", "is-baseline", f"mark-{self.mark}")
        return " ".join(["node", f"node-{self.type}", *compress(names, on)])

    @property
    def tooltip(self) -> str:
        """Everything, unclipped, for the SVG <title>: one line per fact."""
        parts = [f"{self.id} ({self.type.replace('_', ' ')})", *self.phrases]
        if self.traffic is not None:
            share = percent(self.share_pct or 0.0)
            parts.append(f"{self.traffic:,} requests, {share} of the route's counted traffic")
        return "\n".join([*parts, " · ".join(self.flags)]).strip()

    @property
    def lines(self) -> tuple[Line, ...]:
        """The text with its places: the title and the type on top, the details, then the
        traffic count and the flags at the bottom. Empty lines are left out."""
        left, right, top, bottom = self.x + PAD, self.x + self.w - PAD, self.y + 18, self.y + 70
        share = percent(self.share_pct or 0.0)
        counted = "" if self.traffic is None else f"{self.traffic:,} req · {share}"
        lines = [
            Line(self.title, left, top, "node-title"),
            Line(self.type.replace("_", " "), right, top, "node-type"),
            *(
                Line(text, left, self.y + 38 + 15 * i, "node-detail")
                for i, text in enumerate(self.details)
            ),
            Line(counted, left, bottom, "node-traffic"),
            Line(" · ".join(self.flags), right, bottom, "node-flags"),
        ]
        return tuple(line for line in lines if line.text)


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    exit: str  # node_exits' name: then, else, within, exceeded, branches[1]
    label: str  # then, else, within, exceeded, or a branch's share such as 90%
    d: str  # SVG path: source's right side to target's left, cubics and straight runs
    label_x: int
    label_y: int


@dataclass(frozen=True, slots=True)
class Diagram:
    slug: str
    width: int
    height: int
    columns: int
    boxes: tuple[Box, ...]  # column by column, top to bottom
    edges: tuple[Edge, ...]  # by source box, each node's exits in declared order

    @property
    def label(self) -> str:
        """The SVG's aria-label."""
        start = next((box.id for box in self.boxes if box.is_start), "")
        return f"Route {self.slug}: {len(self.boxes)} nodes, starting at {start}"

    @property
    def marker_id(self) -> str:
        """The arrowhead's element id: two different diagrams on one page (a diff's before
        and after) do not share it, and the same diagram always gets the same one."""
        return f"route-arrow-{zlib.crc32(repr((self.boxes, self.edges)).encode()):08x}"


def layout_route(
    route: Route,
    *,
    traffic: Mapping[str, int] | None = None,
    marked: Mapping[str, str] | None = None,
) -> Diagram:
    """The diagram of `route`. `traffic` counts requests by node id (callers pass what ended
    at each terminal); a node shows a count and its share of the counted total only when it
    is in `traffic`. `marked` gives diff marks by node id. Exits to unknown ids are not
    drawn; a node `start` does not reach (a valid route has none) starts a walk of its own."""
    places = _places(route, _walk_order(route))
    counts = {node_id: n for node_id, n in (traffic or {}).items() if node_id in route.nodes}
    total = sum(counts.values())
    guard = route.rollout_guard
    boxes = []
    for node_id, (column, row) in places.items():
        if node_id not in route.nodes:  # a waypoint
            continue
        count = counts.get(node_id)
        share = None if count is None else round(100 * count / max(total, 1), 1)
        boxes.append(
            Box(
                id=node_id,
                type=node_type(route.nodes[node_id]),
                x=MARGIN + column * (BOX_W + COL_GAP),
                y=MARGIN + round(row * (BOX_H + ROW_GAP)),
                w=BOX_W,
                h=BOX_H,
                phrases=describe(route.nodes[node_id]),
                is_start=node_id == route.start,
                is_watched=guard is not None and guard.node == node_id,
                is_baseline=guard is not None and guard.baseline == node_id,
                traffic=count,
                share_pct=share,
                mark=(marked or {}).get(node_id, ""),
            )
        )
    columns = max(column for column, _ in places.values()) + 1
    rows = max(sum(1 for c, _ in places.values() if c == i) for i in range(columns))
    return Diagram(
        slug=route.slug,
        columns=columns,
        width=2 * MARGIN + columns * BOX_W + (columns - 1) * COL_GAP,
        height=2 * MARGIN + rows * BOX_H + (rows - 1) * ROW_GAP,
        boxes=tuple(boxes),
        edges=_edges(route, boxes, places),
    )


def _exits(route: Route, node_id: str) -> list[tuple[str, str]]:
    return [(name, to) for name, to in node_exits(route.nodes[node_id]) if to in route.nodes]


def _walk_order(route: Route) -> list[str]:
    """Ids by first appearance in a depth-first walk from `start` following exits in
    declared order, then from each node not reached, in the route's order."""
    seen: dict[str, None] = {}
    for root in (route.start, *route.nodes):
        todo = [root] if root in route.nodes else []
        while todo:
            node_id = todo.pop()
            if node_id not in seen:
                seen[node_id] = None
                todo.extend(to for _, to in reversed(_exits(route, node_id)))
    return list(seen)


def _columns(route: Route, order: list[str]) -> dict[str, int]:
    """Longest path from a node nothing points to (Kahn's order). A route has no cycle; a
    node on one would keep the column its other parents give it."""
    waiting = dict.fromkeys(order, 0)
    for node_id in order:
        for _, to in _exits(route, node_id):
            waiting[to] += 1
    column = dict.fromkeys(order, 0)
    ready = [node_id for node_id in order if waiting[node_id] == 0]
    for node_id in ready:  # grows while it is walked
        for _, to in _exits(route, node_id):
            column[to] = max(column[to], column[node_id] + 1)
            waiting[to] -= 1
            if waiting[to] == 0:
                ready.append(to)
    return column


def _places(route: Route, order: list[str]) -> dict[str, tuple[int, float]]:
    """Each id's (column, row), column by column, top to bottom, with the waypoints of
    exits that skip columns: a waypoint takes a row in each column between, like a node,
    so the exit runs between boxes instead of behind one. In a column, ids go by the mean
    place of what leads in (a parent's row, nudged by where on its side the exit leaves),
    ties by walk order; short columns are centred on the tallest."""
    column = _columns(route, order)
    onward: dict[str, list[str]] = {node_id: [] for node_id in order}
    for node_id in order:
        for name, to in _exits(route, node_id):
            chain = [_waypoint(node_id, name, c) for c in range(column[node_id] + 1, column[to])]
            for before, after in pairwise([node_id, *chain, to]):
                onward.setdefault(before, []).append(after)
            column.update((way, column[node_id] + 1 + i) for i, way in enumerate(chain))
    rank = {key: i for i, key in enumerate(onward)}  # walk order, then waypoints
    sizes = [sum(1 for c in column.values() if c == i) for i in range(max(column.values()) + 1)]
    into: dict[str, list[float]] = {key: [] for key in onward}

    def pull(key: str) -> tuple[float, int]:
        return sum(into[key]) / max(len(into[key]), 1), rank[key]

    places: dict[str, tuple[int, float]] = {}
    for c, size in enumerate(sizes):
        members = sorted((key for key in onward if column[key] == c), key=pull)
        for row, key in enumerate(members):
            places[key] = (c, (max(sizes) - size) / 2 + row)
            n = len(onward[key])
            for i, after in enumerate(onward[key]):
                into[after].append(places[key][1] + (i - (n - 1) / 2) / (n + 1))
    return places


def _waypoint(source: str, exit_name: str, column: int) -> str:
    # `/` is not a slug character, so no node id looks like a waypoint.
    return f"{source}/{exit_name}/{column}"


def _edges(
    route: Route, boxes: list[Box], places: Mapping[str, tuple[int, float]]
) -> tuple[Edge, ...]:
    """Exits leave a box's right side spread around its middle, in declared order, and
    enter the target's left side in the order of where they come from, so no two share a
    path; an exit that skips columns runs straight across each of its waypoints' rows."""
    at = {box.id: box for box in boxes}
    paths: list[tuple[str, str, str, list[tuple[float, float]]]] = []  # points before target
    for box in boxes:
        exits = _exits(route, box.id)
        for i, (name, to) in enumerate(exits):
            points: list[tuple[float, float]] = [(box.x + box.w, _port(box, i, len(exits)))]
            for c in range(places[box.id][0] + 1, places[to][0]):
                left = MARGIN + c * (BOX_W + COL_GAP)
                y = MARGIN + places[_waypoint(box.id, name, c)][1] * (BOX_H + ROW_GAP) + BOX_H / 2
                points += [(left, y), (left + BOX_W, y)]
            paths.append((box.id, name, to, points))
    arriving: dict[tuple[str, str], float] = {}
    for target in at:
        ins = sorted(
            (pts[-1][1], pts[-1][0], src, name) for src, name, to, pts in paths if to == target
        )
        for i, (_, _, src, name) in enumerate(ins):
            arriving[(src, name)] = _port(at[target], i, len(ins))
    edges = []
    for src, name, to, points in paths:
        d = _curve([*points, (at[to].x, arriving[(src, name)])])
        # The label sits just right of the source, above its exit: siblings' ports are
        # PORT_GAP apart, so their labels do not overlap however the curves go on.
        x, y = points[0]
        label = branch_label(route.nodes[src], name)
        edges.append(Edge(src, to, name, label, d, round(x) + 6, round(y) - 4))
    return tuple(edges)


def _curve(points: list[tuple[float, float]]) -> str:
    """An SVG path through `points`: a cubic, leaving and arriving level, into each
    waypoint's row, a straight line across it, and a cubic on to the next."""
    (x, y), *rest = points
    d = [f"M{_xy(x, y)}"]
    for i, (to_x, to_y) in enumerate(rest):
        bend = (to_x - x) / 2
        if i % 2:
            d.append(f"L{_xy(to_x, to_y)}")
        else:
            d.append(f"C{_xy(x + bend, y)} {_xy(to_x - bend, to_y)} {_xy(to_x, to_y)}")
        x, y = to_x, to_y
    return " ".join(d)


def _port(box: Box, i: int, n: int) -> float:
    gap = min(PORT_GAP, PORT_SPAN / max(n - 1, 1))
    return box.y + box.h / 2 + (i - (n - 1) / 2) * gap


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _xy(x: float, y: float) -> str:
    return f"{_n(x)},{_n(y)}"


def _n(value: float) -> str:
    """At most one decimal, none when whole, so the SVG stays small."""
    return short_number(value)
