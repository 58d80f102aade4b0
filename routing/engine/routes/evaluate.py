"""Walking a route for one request (SPEC R-ROUTE-1, D-23, D-27): from `start`, each node
reads the request's facts (or the key's usage, passed in) and names its exit, until a model
or a reject node ends the walk. Every node visited becomes a `Step` with a short sentence
saying why it went that way — the decision record and the `switchyard` block carry them.

Same inputs, same outcome: splits hash the route, the node and the request's session (or
prompt-cache key, or key id, or the caller's seed) instead of drawing a random number, so a
session stays on its branch. Usage is read through the `Usage` seam, never fetched here.
Pure: no clock, no I/O; `seconds_until_reset` and `narrow_provider` are re-exported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Protocol

from routing.engine.routes.fields import is_number
from routing.engine.routes.graph import (
    MICROS_PER_USD,
    REQUESTED,
    BudgetNode,
    ConditionNode,
    ModelNode,
    RateLimitNode,
    RejectNode,
    Route,
    SplitNode,
    Terminal,
    node_type,
)
from routing.engine.routes.narrow import narrow_provider as narrow_provider
from routing.engine.routes.periods import period_bounds as period_bounds
from routing.engine.routes.periods import seconds_until_reset as seconds_until_reset

SPLIT_BUCKETS = 10_000  # a split's resolution: a weight share is exact to 0.01 %
# When a split's key is absent, the next present one of these is used; a key id always is.
SPLIT_KEY_ORDER = ("session", "prompt_cache_key", "key")
_KEY_LABELS = {"session": "session id", "prompt_cache_key": "prompt_cache_key"}
# By each `by`: the kinds tried in turn, `by` first.
_SPLIT_KEY_ORDERS = {by: (by, *(k for k in SPLIT_KEY_ORDER if k != by)) for by in SPLIT_KEY_ORDER}
_MISSING: Any = object()
Exit = tuple[str, str, str]  # (exit name, the node it leads to, why)
_TERMINALS = (ModelNode, RejectNode)
_COUNTING = (RateLimitNode, BudgetNode)


class Usage(Protocol):
    """The key's usage so far in the current period of each name, supplied by the gateway."""

    def requests(self, period: str) -> int: ...

    def cost_micros(self, period: str) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteFacts:
    """What a route may read of one request."""

    body: Mapping[str, Any] = field(default_factory=dict)
    # Looked up by lowercase name: lowercase keys, or a case-insensitive mapping (Django).
    headers: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    operation: str  # what `endpoint` compares: `chat.completions`, `embeddings`, …
    requested_model: str  # as the client wrote it
    session_id: str | None = None
    prompt_cache_key: str | None = None
    key_id: int
    seed: int  # the only source of `split by: random`; the gateway draws it per request


@dataclass(frozen=True, slots=True)
class Step:
    node: str
    type: str  # the node's type, `rate_limit`
    exit: str | None  # `then`, `else`, `within`, `exceeded`, `branches[1]`; None at the end
    next: str | None  # the node the exit leads to; None at the end
    why: str  # `metadata.customer_plan equals 'pro': true`


@dataclass(frozen=True, slots=True)
class RouteOutcome:
    visited: tuple[Step, ...]  # in walk order, the terminal last
    terminal: Terminal
    # The period of the last exceeded rate_limit or budget node when the walk ends at a
    # reject: D-27's Retry-After counts down to its reset. None otherwise.
    refused_period: str | None = None

    @property
    def model(self) -> ModelNode | None:
        return self.terminal if isinstance(self.terminal, ModelNode) else None

    @property
    def reject(self) -> RejectNode | None:
        return self.terminal if isinstance(self.terminal, RejectNode) else None


def evaluate(route: Route, facts: RouteFacts, usage: Usage) -> RouteOutcome:
    """Walk `route` from its start to a model or reject node.

    The walk takes at most one step per node: a parsed route has no cycle, and a route
    built by hand with one (or with an exit to a missing node) raises ValueError rather
    than loop — that is a bug, not a request's fault.
    """
    steps: list[Step] = []
    node_id, refused = route.start, None
    for _ in range(len(route.nodes)):
        node = route.nodes.get(node_id)
        if node is None:
            raise ValueError(f"route {route.slug!r} has no node {node_id!r}")
        if isinstance(node, _TERMINALS):
            steps.append(Step(node_id, node_type(node), None, None, _terminal_why(node, facts)))
            refused = refused if isinstance(node, RejectNode) else None
            return RouteOutcome(tuple(steps), node, refused)
        exit_name, next_id, why = _STEPS[type(node)](route, node, facts, usage)
        if exit_name == "exceeded" and isinstance(node, _COUNTING):
            refused = node.period
        steps.append(Step(node_id, node_type(node), exit_name, next_id, why))
        node_id = next_id
    raise ValueError(f"route {route.slug!r} reaches no model or reject node (a cycle)")


# One inner node's (exit, next node, why), by node type: a dict look-up rather than a
# chain of isinstance tests, as every request's walk runs it once a node.


def _condition(route: Route, node: ConditionNode, facts: RouteFacts, usage: Usage) -> Exit:
    result, why = _test(node, facts)
    return ("then", node.then, why) if result else ("else", node.else_, why)


def _rate_limit(route: Route, node: RateLimitNode, facts: RouteFacts, usage: Usage) -> Exit:
    used = usage.requests(node.period)
    exceeded = used + 1 > node.requests  # this request would be number used + 1
    verdict = "exceeded" if exceeded else "within"
    why = f"rate_limit {node.period}: {used} of {node.requests} requests used: {verdict}"
    return verdict, node.exceeded if exceeded else node.within, why


def _budget(route: Route, node: BudgetNode, facts: RouteFacts, usage: Usage) -> Exit:
    spent = usage.cost_micros(node.period)
    exceeded = spent >= node.limit_micros
    verdict = "exceeded" if exceeded else "within"
    why = f"budget {node.period}: {_usd(spent)} of {_usd(node.limit_micros)} spent: {verdict}"
    return verdict, node.exceeded if exceeded else node.within, why


def _terminal_why(node: Terminal, facts: RouteFacts) -> str:
    if isinstance(node, RejectNode):
        return f"reject {node.status}: {node.message}"
    if node.model == REQUESTED:
        return f"model requested: {facts.requested_model}"
    return f"model {node.model}"


# Conditions. A missing field (or a JSON null) makes `exists` false and every other
# comparison false, except the negative ones, which are true: "plan is not pro" holds when
# there is no plan.


def _test(node: ConditionNode, facts: RouteFacts) -> tuple[bool, str]:
    actual = _lookup(node.field, facts)
    missing = actual is _MISSING
    if node.op == "exists":
        return not missing, f"{node.field} exists: {_word(not missing)}"
    if missing:
        result = node.op in ("not_equals", "not_in")
    else:
        result = _compare(node.op, actual, node.value)
    absent = " (absent)" if missing else ""
    return result, f"{node.field} {node.op} {_shown(node.value)}: {_word(result)}{absent}"


def _compare(op: str, actual: Any, value: Any) -> bool:
    if op in ("equals", "not_equals"):
        return _same(actual, value) == (op == "equals")
    if op in ("in", "not_in"):
        return any(_same(actual, item) for item in value) == (op == "in")
    if op == "glob":
        return isinstance(actual, str) and fnmatchcase(actual, value)
    if not is_number(actual):  # greater_than / less_than compare numbers only
        return False
    return bool(actual > value) if op == "greater_than" else bool(actual < value)


def _same(actual: Any, value: Any) -> bool:
    """Equality where a boolean equals only a boolean (Python has True == 1)."""
    if isinstance(actual, bool) or isinstance(value, bool):
        return isinstance(actual, bool) and isinstance(value, bool) and actual is value
    return bool(actual == value)


def _lookup(name: str, facts: RouteFacts) -> Any:
    """The field's value in the facts, or _MISSING."""
    prefix, _, rest = name.partition(".")
    if prefix == "metadata":
        value = facts.metadata.get(rest)
    elif prefix == "header":
        value = facts.headers.get(rest)
    elif name == "model":
        value = facts.requested_model
    elif name == "endpoint":
        value = facts.operation
    elif name == "session_id":
        value = facts.session_id
    else:  # `body.<path>`
        value = _walk(facts.body, rest.split("."))
    return _MISSING if value is None else value


def _walk(value: Any, segments: list[str]) -> Any:
    """`body.messages.0.role`: keys into objects, decimal indexes into arrays."""
    for segment in segments:
        if isinstance(value, Mapping):
            value = value.get(segment)
        elif isinstance(value, list | tuple) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return None
    return value


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return _word(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return repr(value)


def _word(flag: bool) -> str:
    return "true" if flag else "false"


def _usd(micros: int) -> str:
    """`$12.30`; below a cent, the micro-dollars that matter (`$0.004123`)."""
    if micros % 10_000 == 0:
        return f"${micros / MICROS_PER_USD:.2f}"
    return f"${micros / MICROS_PER_USD:.6f}".rstrip("0")


# Splits.


def split_bucket(route_slug: str, node_id: str, key: str) -> int:
    """0..SPLIT_BUCKETS-1 from sha256 of the route, the node and the key: stable across
    processes and releases (Python's hash() is salted per process), and independent
    between nodes, so two splits in one route do not move together."""
    digest = hashlib.sha256(f"{route_slug}\x00{node_id}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SPLIT_BUCKETS


def _split_key(by: str, facts: RouteFacts) -> tuple[str, str, tuple[str, ...]]:
    """(the kind used, its value, the kinds skipped because absent)."""
    if by == "random":
        return "random", str(facts.seed), ()
    skipped: tuple[str, ...] = ()
    for kind in _SPLIT_KEY_ORDERS[by]:
        if kind == "session":
            value = facts.session_id
        elif kind == "prompt_cache_key":
            value = facts.prompt_cache_key
        else:
            return kind, str(facts.key_id), skipped  # always present
        if value:
            return kind, value, skipped
        skipped += (kind,)
    raise AssertionError("a key id is always present")  # pragma: no cover


def _split(route: Route, node: SplitNode, facts: RouteFacts, usage: Usage) -> Exit:
    kind, key, skipped = _split_key(node.by, facts)
    bucket = split_bucket(route.slug, node.id, key)
    total, index = node.total, len(node.branches) - 1  # the last takes any rounding rest
    for i, running in enumerate(node.running):
        # bucket / BUCKETS < running / total, without dividing
        if bucket * total < running * SPLIT_BUCKETS:
            index = i
            break
    chosen = node.branches[index]
    via = ""
    if skipped:
        via = f"no {' or '.join(_KEY_LABELS[k] for k in skipped)}, by {kind}: "
    # ASCII: one character past Latin-1 makes the whole trace's JSON a string of two bytes
    # a character, encoded again for the database (~26 K instructions a routed request).
    why = f"split by {node.by}: {via}bucket {bucket} -> {chosen.next} ({node.shares[index]})"
    return f"branches[{index}]", chosen.next, why


_STEPS: dict[type, Callable[[Route, Any, RouteFacts, Usage], Exit]] = {
    ConditionNode: _condition,
    SplitNode: _split,
    RateLimitNode: _rate_limit,
    BudgetNode: _budget,
}
