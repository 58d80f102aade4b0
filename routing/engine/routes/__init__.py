"""Dynamic routes (SPEC R-ROUTE-1, R-ROUTE-2, R-BEY-4, D-23, D-25..D-27), the pure part:
the route values (graph), validation with every problem's path (parse), which route handles
a request (select), the walk for one request (evaluate), version diffs (diff) and the
rollout guard's verdict (guard). The gateway stores versions, counts usage and acts."""

from routing.engine.routes.diff import Change, diff_routes, flow_value, render_diff
from routing.engine.routes.evaluate import (
    RouteFacts,
    RouteOutcome,
    Step,
    Usage,
    evaluate,
    split_bucket,
)
from routing.engine.routes.fields import Problem, RouteInvalid
from routing.engine.routes.graph import (
    AUTO,
    REQUESTED,
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
    Terminal,
    canonical_json,
    content_hash,
    node_exits,
    node_pin_scope,
    node_type,
)
from routing.engine.routes.guard import GuardVerdict, WindowStats, guard_verdict
from routing.engine.routes.narrow import narrow_provider
from routing.engine.routes.parse import parse_route
from routing.engine.routes.periods import period_bounds, seconds_until_reset
from routing.engine.routes.select import handles, route_for

__all__ = [
    "AUTO",
    "REQUESTED",
    "Branch",
    "BudgetNode",
    "Change",
    "ConditionNode",
    "GuardVerdict",
    "ModelNode",
    "Node",
    "Problem",
    "RateLimitNode",
    "RejectNode",
    "RolloutGuard",
    "Route",
    "RouteFacts",
    "RouteInvalid",
    "RouteOutcome",
    "SplitNode",
    "Step",
    "Terminal",
    "Usage",
    "WindowStats",
    "canonical_json",
    "content_hash",
    "diff_routes",
    "evaluate",
    "flow_value",
    "guard_verdict",
    "handles",
    "narrow_provider",
    "node_exits",
    "node_pin_scope",
    "node_type",
    "parse_route",
    "period_bounds",
    "render_diff",
    "route_for",
    "seconds_until_reset",
    "split_bucket",
]
