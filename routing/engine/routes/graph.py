"""The values of a dynamic route (SPEC R-ROUTE-1, D-23, D-26, D-27): the `Route`, one frozen
dataclass per node type, the rollout guard, and the canonical JSON and content hash of a
route's raw mapping that make its versions immutable and comparable (R-ROUTE-2, D-25).
These are what `parse_route` builds from configuration and what `evaluate` walks; nothing
here validates or decides. Pure: no Django, no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from routing.engine.types import Mode, ProviderPrefs

NODE_TYPES = ("condition", "split", "rate_limit", "budget", "model", "reject")
CONDITION_OPS = (
    "equals",
    "not_equals",
    "in",
    "not_in",
    "exists",
    "glob",
    "greater_than",
    "less_than",
)
# Condition fields named exactly; the others are `body.<path>`, `header.<name>`,
# `metadata.<key>`. `endpoint` is the operation (`chat.completions`).
PLAIN_FIELDS = ("model", "endpoint", "session_id")
FIELD_PREFIXES = ("body", "header", "metadata")
SPLIT_BY = ("session", "prompt_cache_key", "key", "random")
RATE_PERIODS = ("minute", "hour", "daily", "weekly", "monthly")
BUDGET_PERIODS = ("daily", "weekly", "monthly")
REJECT_STATUSES = (402, 429, 403)  # budget_exceeded, rate_limited, route_rejected (D-27)
REQUESTED = "requested"  # a model node keeping the model the request named (D-23)
AUTO = "auto"  # how a model node naming any auto alias is stored
MICROS_PER_USD = 1_000_000  # money is stored as integer micro-dollars (CONFIG.md)
DEFAULT_MODELS = ("*",)  # a route without `models` handles every requested model (D-23)
GUARD_WINDOW_S = 300  # D-26 defaults
GUARD_INTERVAL_S = 30


@dataclass(frozen=True, slots=True)
class ConditionNode:
    id: str
    field: str  # as validated: `metadata.customer_plan`, `header.x-team` (lowercased name)
    op: str  # one of CONDITION_OPS
    value: Any  # a scalar, a tuple for in/not_in, None for exists
    then: str
    else_: str


@dataclass(frozen=True, slots=True)
class Branch:
    weight: float  # > 0; shares are weight / the sum of the node's weights
    next: str


@dataclass(frozen=True, slots=True)
class SplitNode:
    id: str
    by: str  # one of SPLIT_BY
    branches: tuple[Branch, ...]
    # Worked out once, as the node never changes, not on every request's walk: the weights'
    # sum, each branch's running sum in declared order, and its share as a step's `why`
    # tells it (`weight 90 of 100`).
    total: float = field(init=False, repr=False, compare=False)
    running: tuple[float, ...] = field(init=False, repr=False, compare=False)
    shares: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        running, sums = 0.0, []
        for branch in self.branches:
            running += branch.weight
            sums.append(running)
        total = sum(branch.weight for branch in self.branches)
        object.__setattr__(self, "total", total)
        object.__setattr__(self, "running", tuple(sums))
        shares = tuple(f"weight {b.weight:g} of {total:g}" for b in self.branches)
        object.__setattr__(self, "shares", shares)


@dataclass(frozen=True, slots=True)
class RateLimitNode:
    id: str
    period: str  # one of RATE_PERIODS
    requests: int  # >= 1: the requests the key may make in the period
    within: str
    exceeded: str


@dataclass(frozen=True, slots=True)
class BudgetNode:
    id: str
    period: str  # one of BUDGET_PERIODS
    limit_micros: int  # `usd` in integer micro-dollars, > 0
    within: str
    exceeded: str


@dataclass(frozen=True, slots=True)
class ModelNode:
    id: str
    model: str  # a canonical slug, a virtual model, AUTO or REQUESTED
    mode: Mode | None = None
    provider: ProviderPrefs | None = None  # narrows the request's, never widens
    fallbacks: tuple[str, ...] = ()  # canonical slugs or REQUESTED, at most MAX_FALLBACK_MODELS
    allow_fallbacks: bool = True
    session_affinity: bool | None = None  # None: the request's or the workspace's setting
    cache_affinity: bool | None = None


@dataclass(frozen=True, slots=True)
class RejectNode:
    id: str
    status: int  # one of REJECT_STATUSES
    message: str


Node = ConditionNode | SplitNode | RateLimitNode | BudgetNode | ModelNode | RejectNode
Terminal = ModelNode | RejectNode


@dataclass(frozen=True, slots=True)
class RolloutGuard:
    """Watch `node` against `baseline` over `window_s` of traffic (R-BEY-4, D-26). A bound
    left None is not checked; parsing requires at least one."""

    node: str
    baseline: str
    min_requests: int
    max_error_rate_delta: float | None = None  # absolute: 0.02 = two percentage points
    max_p99_ratio: float | None = None
    max_cost_ratio: float | None = None  # cost per request, watched / baseline
    window_s: int = GUARD_WINDOW_S
    interval_s: int = GUARD_INTERVAL_S


@dataclass(frozen=True, slots=True)
class Route:
    """A validated route. `nodes` is never mutated after parsing; the graph has no cycle
    and every node is reachable from `start`."""

    slug: str
    start: str
    nodes: Mapping[str, Node]
    description: str = ""
    models: tuple[str, ...] = DEFAULT_MODELS
    rollout_guard: RolloutGuard | None = None


def node_type(node: Node) -> str:
    """The configuration's name of the node's type (`rate_limit`), for steps and diffs."""
    return _TYPE_NAMES[type(node)]


def node_exits(node: Node) -> tuple[tuple[str, str], ...]:
    """(exit name, next node id) in declared order; terminals have none. A split's exits
    are named by branch, `branches[1]`, so two branches to one node stay apart."""
    if isinstance(node, ConditionNode):
        return (("then", node.then), ("else", node.else_))
    if isinstance(node, SplitNode):
        return tuple((f"branches[{i}]", branch.next) for i, branch in enumerate(node.branches))
    if isinstance(node, RateLimitNode | BudgetNode):
        return (("within", node.within), ("exceeded", node.exceeded))
    return ()


_TYPE_NAMES: dict[type, str] = {
    ConditionNode: "condition",
    SplitNode: "split",
    RateLimitNode: "rate_limit",
    BudgetNode: "budget",
    ModelNode: "model",
    RejectNode: "reject",
}


def canonical_json(data: Mapping[str, Any]) -> bytes:
    """One byte string per route content: sorted keys, no spaces, UTF-8, no NaN. Two
    mappings that differ only in key order or formatting give the same bytes."""
    text = json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode()


def content_hash(data: Mapping[str, Any]) -> str:
    """sha256 hex of `canonical_json`: saving an unchanged route finds its version (D-25)."""
    return hashlib.sha256(canonical_json(data)).hexdigest()


def node_pin_scope(node: ModelNode) -> str:
    """What a routed request's pin keys add to name its model node by what it says (model,
    mode, provider narrowing, fallbacks, affinity switches), not by its id or the route's
    version: a deploy that leaves the node as it was keeps its sessions' pins; one that
    changes it, or a rollback to a version that chooses otherwise, finds none (R-BEY-4).
    Stable across processes, for pins shared between replicas (R-BEY-9)."""
    fields = asdict(node)
    del fields["id"]
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=_sorted)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _sorted(value: object) -> object:
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"not part of a route node: {type(value).__name__}")
