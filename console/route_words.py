"""What a route's nodes and exits say in the console's diagram, in the words a person
reads: "metadata.customer_plan equals pro", "by session", "100 requests / minute",
"$50.00 / day", "acme/small · price" with its fallbacks, "429 Over the limit.", and a
split's exits by their share of traffic ("90%", "33.3%"). Pure.
"""

from __future__ import annotations

from routing.engine.routes.graph import (
    AUTO,
    MICROS_PER_USD,
    REQUESTED,
    BudgetNode,
    ConditionNode,
    ModelNode,
    Node,
    RateLimitNode,
    RejectNode,
    SplitNode,
)

_OP_WORDS = {
    "equals": "equals",
    "not_equals": "does not equal",
    "in": "is one of",
    "not_in": "is not one of",
    "glob": "matches",
    "greater_than": "is greater than",
    "less_than": "is less than",
}
_SPLIT_WORDS = {
    "session": "by session",
    "prompt_cache_key": "by prompt cache key",
    "key": "by API key",
    "random": "at random",
}
_PERIOD_UNITS = {
    "minute": "minute",
    "hour": "hour",
    "daily": "day",
    "weekly": "week",
    "monthly": "month",
}


def describe(node: Node) -> tuple[str, ...]:
    """What the node does, in the words a person reads, one phrase per line wanted."""
    if isinstance(node, ConditionNode):
        if node.op == "exists":
            return (f"{node.field} is present",)
        return (f"{node.field} {_OP_WORDS.get(node.op, node.op)} {_value(node.value)}",)
    if isinstance(node, SplitNode):
        return (_SPLIT_WORDS.get(node.by, f"by {node.by}"),)
    if isinstance(node, RateLimitNode):
        return (f"{node.requests:,} requests / {_PERIOD_UNITS.get(node.period, node.period)}",)
    if isinstance(node, BudgetNode):
        return (f"{_usd(node.limit_micros)} / {_PERIOD_UNITS.get(node.period, node.period)}",)
    if isinstance(node, ModelNode):
        model = {REQUESTED: "the requested model", AUTO: "auto"}.get(node.model, node.model)
        first = f"{model} · {node.mode}" if node.mode else model
        if not node.allow_fallbacks:
            return (first, "no fallbacks")
        return (first, f"fallbacks: {', '.join(node.fallbacks)}") if node.fallbacks else (first,)
    assert isinstance(node, RejectNode)
    return (f"{node.status} {node.message}",)


def branch_label(node: Node, exit_name: str) -> str:
    """A split's exit is labelled with its branch's share of traffic; others by name."""
    if not isinstance(node, SplitNode):
        return exit_name
    index = int(exit_name.removeprefix("branches[").removesuffix("]"))
    return percent(100 * node.branches[index].weight / sum(b.weight for b in node.branches))


def percent(share: float) -> str:
    """One decimal, none when whole: 90 → `90%`, 100/3 → `33.3%`."""
    return f"{short_number(share)}%"


def _usd(micros: int) -> str:
    """`$50.00`; below a cent, the micro-dollars that matter (`$0.004123`)."""
    if micros % 10_000 == 0:
        return f"${micros / MICROS_PER_USD:,.2f}"
    return f"${micros / MICROS_PER_USD:.6f}".rstrip("0")


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ", ".join(_value(item) for item in value)
    return str(value)


def short_number(value: float) -> str:
    """At most one decimal, none when whole: 90 → `90`, 100/3 → `33.3`."""
    rounded = round(float(value), 1)
    return str(int(rounded)) if rounded.is_integer() else str(rounded)
