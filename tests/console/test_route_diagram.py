"""A dynamic route laid out for the route studio (console/route_diagram.py) and drawn by
`console/_route_diagram.html`: one box per node and one labelled edge per exit, every exit
pointing right, split shares, what each box says, traffic, flags and diff marks, a
deterministic layout, and a template that escapes route text and uses no inline style. No
database."""

import re

import pytest
from django.template.loader import render_to_string
from hypothesis import given, settings
from hypothesis import strategies as st

from console.route_diagram import DETAIL_CHARS, Box, Diagram, layout_route
from routing.engine.routes import (
    Branch,
    BudgetNode,
    ConditionNode,
    ModelNode,
    Node,
    RateLimitNode,
    RejectNode,
    RolloutGuard,
    Route,
    SplitNode,
    node_exits,
    parse_route,
)
from routing.engine.types import Mode
from tests.routing.route_builders import CATALOG, config_example_wired

# An SVG path's commands: `M244,200`, `C292,200 292,156 340,156`, `L900,156`.
SEGMENT = re.compile(r"([MCL])([^MCL]*)")


def config_route() -> Route:
    """CONFIG.md's example with every node reachable (90 % through `slow-down`)."""
    return parse_route(config_example_wired(), path="", catalog=CATALOG)


def route_of(*nodes: Node, guard: RolloutGuard | None = None) -> Route:
    return Route(slug="r", start=nodes[0].id, nodes={node.id: node for node in nodes},
                 rollout_guard=guard)  # fmt: skip


def box_of(diagram: Diagram, node_id: str) -> Box:
    (found,) = [box for box in diagram.boxes if box.id == node_id]
    return found


def overlap(a: Box, b: Box) -> bool:
    return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h


def assert_drawn_cleanly(diagram: Diagram) -> None:
    """No two boxes overlap, every box is inside the picture, every edge points right, and
    no edge passes behind a box: each curve stays in a gap between columns, and each
    straight run across a column keeps clear of that column's boxes."""
    boxes = {box.id: box for box in diagram.boxes}
    for i, a in enumerate(diagram.boxes):
        assert a.x >= 0
        assert a.y >= 0
        assert a.x + a.w <= diagram.width
        assert a.y + a.h <= diagram.height
        assert not any(overlap(a, b) for b in diagram.boxes[i + 1 :]), a.id
    for edge in diagram.edges:
        source, target = boxes[edge.source], boxes[edge.target]
        assert target.x > source.x + source.w, (edge.source, edge.target)
        x = 0.0
        for command, numbers in SEGMENT.findall(edge.d):
            *_, to_x, to_y = map(float, re.findall(r"[\d.]+", numbers))
            beside = [b for b in diagram.boxes if b.x < to_x and x < b.x + b.w]
            if command == "C":
                assert beside == [], edge
            elif command == "L":
                assert not any(b.y <= to_y <= b.y + b.h for b in beside), edge
            x = to_x


def test_every_node_gets_one_box_and_every_exit_one_labelled_edge():
    # given
    route = config_route()
    # when
    diagram = layout_route(route)
    # then
    assert sorted(box.id for box in diagram.boxes) == sorted(route.nodes)
    assert sorted((e.source, e.exit, e.target, e.label) for e in diagram.edges) == [
        ("big", "exceeded", "small", "exceeded"),
        ("big", "within", "big-model", "within"),
        ("plan", "else", "split", "else"),
        ("plan", "then", "big", "then"),
        ("slow-down", "exceeded", "refuse", "exceeded"),
        ("slow-down", "within", "small", "within"),
        ("split", "branches[0]", "slow-down", "90%"),
        ("split", "branches[1]", "canary", "10%"),
    ]


def test_config_example_lays_out_in_four_columns_left_to_right_without_overlap():
    # when
    diagram = layout_route(config_route())
    # then
    assert diagram.columns == 4
    assert len({box.x for box in diagram.boxes}) == 4
    assert box_of(diagram, "plan").x < box_of(diagram, "split").x < box_of(diagram, "canary").x
    assert_drawn_cleanly(diagram)


def test_an_exit_that_skips_a_column_runs_between_that_columns_boxes():
    # given: `big` (column 1) exceeds to `small` (column 3), past big-model and slow-down
    route = config_route()
    # when
    diagram = layout_route(route)
    # then
    (skipping,) = [e for e in diagram.edges if (e.source, e.exit) == ("big", "exceeded")]
    assert [command for command, _ in SEGMENT.findall(skipping.d)] == ["M", "C", "L", "C"]
    assert_drawn_cleanly(diagram)


@pytest.mark.parametrize(
    ("weights", "labels"),
    [
        ((90, 10), ["90%", "10%"]),
        ((1, 1, 1), ["33.3%", "33.3%", "33.3%"]),  # one decimal, dropped when whole
        ((3, 1), ["75%", "25%"]),
    ],
)
def test_split_exits_are_labelled_with_their_branch_shares(weights, labels):
    # given
    branches = tuple(Branch(w, f"m{i}") for i, w in enumerate(weights))
    models = [ModelNode(f"m{i}", "acme/m1") for i in range(len(weights))]
    route = route_of(SplitNode("s", "random", branches), *models)
    # when
    diagram = layout_route(route)
    # then
    assert [edge.label for edge in diagram.edges] == labels


def crossings(diagram: Diagram) -> int:
    """Pairs of curves in the same gap between columns whose ends swap places."""
    curves = []
    for edge in diagram.edges:
        x, y = 0.0, 0.0
        for command, numbers in SEGMENT.findall(edge.d):
            *_, to_x, to_y = map(float, re.findall(r"[\d.]+", numbers))
            if command == "C":
                curves.append((x, y, to_x, to_y))
            x, y = to_x, to_y
    return sum(1 for i, a in enumerate(curves) for b in curves[i + 1 :]
               if (a[0], a[2]) == (b[0], b[2]) and (a[1] - b[1]) * (a[3] - b[3]) < 0)  # fmt: skip


def test_a_column_follows_what_leads_into_it_so_exits_cross_little():
    # given: `big` is walked to before `limit`, but `limit`'s place follows `plan`'s else
    route = route_of(
        ConditionNode("plan", "metadata.plan", "equals", "pro", "big", "limit"),
        ModelNode("big", "acme/m1"),
        RateLimitNode("limit", "minute", 10, "small", "big"),
        ModelNode("small", "acme/m2"),
    )
    # when
    diagram = layout_route(route)
    # then: only limit's own two exits cross, which no order avoids
    assert crossings(diagram) == 1
    assert box_of(diagram, "big").y < box_of(diagram, "small").y
    assert crossings(layout_route(config_route())) == 0


def test_two_exits_to_one_node_are_drawn_apart():
    # given
    route = route_of(ConditionNode("c", "model", "equals", "x", "m", "m"), ModelNode("m", "a/b"))
    # when
    then_edge, else_edge = layout_route(route).edges
    # then
    assert (then_edge.label, else_edge.label) == ("then", "else")
    assert then_edge.d != else_edge.d
    assert then_edge.label_y < else_edge.label_y


def test_layout_is_deterministic_and_ignores_the_order_nodes_are_listed_in():
    # given
    route = config_route()
    backwards = dict(reversed(route.nodes.items()))
    reordered = Route(route.slug, route.start, backwards, rollout_guard=route.rollout_guard)
    # when
    first, again, other = layout_route(route), layout_route(route), layout_route(reordered)
    # then
    assert first == again == other


@pytest.mark.parametrize(
    ("node", "details"),
    [
        (ConditionNode("n", "metadata.customer_plan", "equals", "pro", "x", "y"),
         ("metadata.customer_plan equals pro",)),
        (ConditionNode("n", "header.x-team", "in", ("a", "b"), "x", "y"),
         ("header.x-team is one of a, b",)),
        (ConditionNode("n", "session_id", "exists", None, "x", "y"), ("session_id is present",)),
        (SplitNode("n", "session", (Branch(1, "x"),)), ("by session",)),
        (BudgetNode("n", "daily", 50_000_000, "x", "y"), ("$50.00 / day",)),
        (RateLimitNode("n", "minute", 100, "x", "y"), ("100 requests / minute",)),
        (ModelNode("n", "anthropic/claude-sonnet-4", Mode.LATENCY,
                   fallbacks=("meta/llama-3.3-70b",)),
         ("anthropic/claude-sonnet-4 · latency", "fallbacks: meta/llama-3.3-70b")),
        (ModelNode("n", "requested", allow_fallbacks=False),
         ("the requested model", "no fallbacks")),
        (RejectNode("n", 429, "Support traffic is over its limit."),
         ("429 Support traffic is over its", "limit.")),
    ],
)  # fmt: skip
def test_detail_lines_say_what_the_node_does(node, details):
    # given
    nodes = [node, *(ModelNode(to, "acme/m1") for _, to in node_exits(node) if to != node.id)]
    route = route_of(*dict.fromkeys(nodes))
    # when
    box = box_of(layout_route(route), "n")
    # then
    assert box.details == details
    assert box.title == "n"


def test_long_text_is_clipped_on_the_box_and_kept_whole_in_its_tooltip():
    # given
    message = "Support traffic is over its limit; try again after the top of the hour please."
    route = route_of(RejectNode("a-rather-long-node-identifier", 429, message))
    # when
    box = layout_route(route).boxes[0]
    # then
    assert box.title == "a-rather-long-node-…"
    assert box.details[1].endswith("…")
    assert all(len(line) <= DETAIL_CHARS for line in box.details)
    assert f"429 {message}" in box.tooltip.splitlines()


def test_traffic_counts_and_shares_appear_only_on_the_nodes_given():
    # given
    traffic = {"small": 900, "canary": 100}
    # when
    diagram = layout_route(config_route(), traffic=traffic)
    # then
    counted = {box.id: (box.traffic, box.share_pct) for box in diagram.boxes if box.traffic}
    assert counted == {"small": (900, 90.0), "canary": (100, 10.0)}
    assert box_of(diagram, "refuse").traffic is None
    assert "900 req · 90%" in [line.text for line in box_of(diagram, "small").lines]
    assert "900 requests, 90% of the route's counted traffic" in box_of(diagram, "small").tooltip


def test_start_guard_nodes_and_diff_marks_become_classes_and_tags():
    # given
    marked = {"canary": "added", "split": "changed"}
    # when
    diagram = layout_route(config_route(), marked=marked)
    # then
    assert box_of(diagram, "plan").classes == "node node-condition is-start"
    assert box_of(diagram, "canary").classes == "node node-model is-watched mark-added"
    assert box_of(diagram, "small").classes == "node node-model is-baseline"
    assert box_of(diagram, "split").classes == "node node-split mark-changed"
    assert box_of(diagram, "canary").flags == ("watched", "added")


def test_rendered_diagram_escapes_route_text_and_uses_no_inline_style():
    # given
    route = route_of(
        ConditionNode("gate", "body.user", "equals", '"><img src=x onerror=alert(1)>', "no", "ok"),
        RejectNode("no", 403, "<script>alert('owned')</script>"),
        ModelNode("ok", "acme/m1"),
    )
    # when
    html = render_to_string("console/_route_diagram.html", {"diagram": layout_route(route)})
    # then
    assert "<script" not in html
    assert "<img" not in html
    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in html
    assert "style=" not in html
    assert "<style" not in html
    assert 'role="img"' in html
    assert 'aria-label="Route r: 3 nodes, starting at gate"' in html
    assert html.count('<path class="edge"') == 2
    assert html.count('<g class="node node-') == 3


def test_rendered_diagram_shows_traffic_and_labels():
    # given
    diagram = layout_route(config_route(), traffic={"small": 900, "canary": 100})
    # when
    html = render_to_string("console/_route_diagram.html", {"diagram": diagram})
    # then
    assert "900 req · 90%" in html
    assert "100 req · 10%" in html
    (ninety,) = [edge for edge in diagram.edges if edge.label == "90%"]
    assert f'<text class="edge-label" x="{ninety.label_x}" y="{ninety.label_y}">90%</text>' in html
    assert f'viewBox="0 0 {diagram.width} {diagram.height}"' in html
    assert f'marker-end="url(#{diagram.marker_id})"' in html


def test_two_different_diagrams_name_their_arrowheads_apart():
    # given
    before = layout_route(config_route())
    after = layout_route(config_route(), marked={"canary": "added"})
    # then
    assert before.marker_id != after.marker_id
    assert before.marker_id == layout_route(config_route()).marker_id


TERMINALS = ("model", "reject")
INNER = ("condition", "split", "rate_limit", "budget")


@st.composite
def acyclic_routes(draw: st.DrawFn) -> Route:
    """Up to nine nodes, each exit to a later node, so there is no cycle; two exits may
    share a target and a node may be reached by no exit."""
    ids = [f"n{i}" for i in range(draw(st.integers(1, 9)))]
    nodes: list[Node] = []
    for i, node_id in enumerate(ids):
        later = st.sampled_from(ids[i + 1 :] or ["unused"])
        kind = draw(st.sampled_from(INNER + TERMINALS if i + 1 < len(ids) else TERMINALS))
        if kind == "model":
            nodes.append(ModelNode(node_id, "acme/m1"))
        elif kind == "reject":
            nodes.append(RejectNode(node_id, 429, "no"))
        elif kind == "condition":
            nodes.append(ConditionNode(node_id, "model", "equals", "x", draw(later), draw(later)))
        elif kind == "split":
            weights = draw(st.lists(st.integers(1, 100), min_size=1, max_size=4))
            nodes.append(
                SplitNode(node_id, "random", tuple(Branch(w, draw(later)) for w in weights))
            )
        elif kind == "rate_limit":
            nodes.append(RateLimitNode(node_id, "minute", 10, draw(later), draw(later)))
        else:
            nodes.append(BudgetNode(node_id, "daily", 1_000_000, draw(later), draw(later)))
    return route_of(*nodes)


@settings(max_examples=150, deadline=None)
@given(acyclic_routes())
def test_any_acyclic_route_lays_out_without_overlap_and_with_every_edge_pointing_right(route):
    # when
    diagram = layout_route(route)
    # then
    assert sorted(box.id for box in diagram.boxes) == sorted(route.nodes)
    assert len(diagram.edges) == sum(len(node_exits(node)) for node in route.nodes.values())
    assert_drawn_cleanly(diagram)
