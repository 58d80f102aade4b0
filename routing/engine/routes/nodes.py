"""Reading each node type of a route (SPEC R-ROUTE-1, CONFIG.md "dynamic routes"): its keys,
values and exits, with every problem recorded at its full path. A node reader returns the
node, or None when any of its own values is bad; the exits it reads become the edges that
`parse_route` checks as a graph. Model names resolve as a request's do (routing.engine.names)
and the `provider` object is parsed by the request's own parser, so its shape is defined
once. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from routing.engine.names import resolve_model_name
from routing.engine.resolve import CatalogNames, ResolveError, parse_provider
from routing.engine.routes.fields import Fields, Problem, is_number, quoted_hint
from routing.engine.routes.graph import (
    AUTO,
    BUDGET_PERIODS,
    CONDITION_OPS,
    FIELD_PREFIXES,
    MICROS_PER_USD,
    PLAIN_FIELDS,
    RATE_PERIODS,
    REJECT_STATUSES,
    REQUESTED,
    SPLIT_BY,
    Branch,
    BudgetNode,
    ConditionNode,
    ModelNode,
    Node,
    RateLimitNode,
    RejectNode,
    SplitNode,
)
from routing.engine.types import AUTO_ALIASES, MAX_FALLBACK_MODELS, Mode, ProviderPrefs

NODE_KEYS: dict[str, tuple[str, ...]] = {
    "condition": ("type", "field", "op", "value", "then", "else"),
    "split": ("type", "by", "branches"),
    "rate_limit": ("type", "period", "requests", "within", "exceeded"),
    "budget": ("type", "period", "usd", "within", "exceeded"),
    "model": (
        "type",
        "model",
        "mode",
        "provider",
        "fallbacks",
        "allow_fallbacks",
        "session_affinity",
        "cache_affinity",
    ),
    "reject": ("type", "status", "message"),
}
BRANCH_KEYS = ("weight", "next")
_FIELD_HINT = "body.<path>, header.<name>, metadata.<key>, model, endpoint or session_id"
_LIST_OPS = ("in", "not_in")
_NUMBER_OPS = ("greater_than", "less_than")


@dataclass(frozen=True, slots=True)
class Edge:
    source: str  # node id
    path: str  # the exit's full path: `….nodes.split.branches[1].next`
    target: str  # an existing node id


@dataclass(slots=True)
class Reading:
    """The state of one route's parse: the declared ids, the edges found, the problems."""

    ids: frozenset[str]
    catalog: CatalogNames
    problems: list[Problem]
    edges: list[Edge] = field(default_factory=list)

    def exit(self, f: Fields, key: str, source: str) -> str | None:
        """An exit to an existing node, recorded as an edge."""
        target = f.text(key, required=True)
        if target is None:
            return None
        if target not in self.ids:
            f.error(key, f"unknown node {target!r}")
            return None
        self.edges.append(Edge(source, f.at(key), target))
        return target


NodeReader = Callable[[Fields, str, Reading], Node | None]


def read_condition(f: Fields, node_id: str, r: Reading) -> Node | None:
    name = _condition_field(f)
    op = f.choice("op", CONDITION_OPS, required=True)
    ok, value = _condition_value(f, op, name)
    then, else_ = r.exit(f, "then", node_id), r.exit(f, "else", node_id)
    if name is None or op is None or not ok or then is None or else_ is None:
        return None
    return ConditionNode(node_id, name, op, value, then, else_)


def _condition_field(f: Fields) -> str | None:
    """The field, with a header's name lowercased (facts carry lowercase header names)."""
    name = f.text("field", required=True)
    if name is None or name in PLAIN_FIELDS:
        return name
    prefix, dot, rest = name.partition(".")
    # A body path walks nested keys, so none of its segments may be empty (`body.a..b`).
    empty_segment = prefix == "body" and "" in rest.split(".")
    if prefix in FIELD_PREFIXES and dot and rest.strip() and not empty_segment:
        return f"header.{rest.lower()}" if prefix == "header" else name
    f.error("field", f"{name!r} is not {_FIELD_HINT}")
    return None


def _condition_value(f: Fields, op: str | None, name: str | None) -> tuple[bool, Any]:
    """(valid, the value as stored). Every field but `body.*` holds strings, so comparing
    one with a number could never be true: refused here rather than silently never matching."""
    given = f.present("value", op is not None and op != "exists")
    if op is None or (op != "exists" and not given):
        return False, None
    value = f.get("value")
    strings_only = name is not None and not name.startswith("body.")
    if op == "exists":
        if given:
            f.error("value", "is not used by op exists")
        return not given, None
    if op in _NUMBER_OPS:
        if strings_only:
            f.error("op", f"{op} compares numbers, and {name} is a string")
            return False, None
        if not is_number(value):
            f.error("value", f"must be a number for op {op}")
            return False, None
        return True, value
    items = value if op in _LIST_OPS else [value]
    if op in _LIST_OPS and (not isinstance(items, list) or not items):
        f.error("value", f"must be a non-empty list for op {op}")
        return False, None
    good = True
    for index, item in enumerate(items):
        at = f"value[{index}]" if op in _LIST_OPS else "value"
        if not (isinstance(item, str | bool) or is_number(item)):
            f.error(at, "must be a string, a number or true/false")
            good = False
        elif (strings_only or op == "glob") and not isinstance(item, str):
            f.error(at, f"must be a string{quoted_hint(item)}")
            good = False
    return good, tuple(items) if op in _LIST_OPS else value


def read_split(f: Fields, node_id: str, r: Reading) -> Node | None:
    by = f.choice("by", SPLIT_BY, required=True)
    branches: list[Branch] = []
    raw_branches = f.items("branches", required=True) or []
    for index, raw in enumerate(raw_branches):
        b = Fields(raw, f.at(f"branches[{index}]"), r.problems, BRANCH_KEYS)
        weight = b.number("weight", above_zero=True, required=True)
        target = r.exit(b, "next", node_id)
        if weight is not None and target is not None:
            branches.append(Branch(weight, target))
    if by is None or not raw_branches or len(branches) != len(raw_branches):
        return None
    return SplitNode(node_id, by, tuple(branches))


def read_rate_limit(f: Fields, node_id: str, r: Reading) -> Node | None:
    period = f.choice("period", RATE_PERIODS, required=True)
    requests = f.integer("requests", minimum=1, required=True)
    within, exceeded = r.exit(f, "within", node_id), r.exit(f, "exceeded", node_id)
    if period is None or requests is None or within is None or exceeded is None:
        return None
    return RateLimitNode(node_id, period, requests, within, exceeded)


def read_budget(f: Fields, node_id: str, r: Reading) -> Node | None:
    period = f.choice("period", BUDGET_PERIODS, required=True)
    usd = f.number("usd", above_zero=True, required=True)
    # Through the decimal text, so 0.1 is 100000 micro-dollars and not 99999.99…
    micros = None if usd is None else _to_micros(f.get("usd"))
    if micros == 0:
        f.error("usd", "must be at least 0.000001")
    within, exceeded = r.exit(f, "within", node_id), r.exit(f, "exceeded", node_id)
    if period is None or not micros or within is None or exceeded is None:
        return None
    return BudgetNode(node_id, period, micros, within, exceeded)


def _to_micros(usd: float) -> int:
    exact = Decimal(str(usd)) * MICROS_PER_USD
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def read_model(f: Fields, node_id: str, r: Reading) -> Node | None:
    mark = len(r.problems)  # flags and mode read as None when absent and when bad alike
    raw = f.text("model", required=True)
    model = None if raw is None else _model_name(f, "model", raw, r.catalog, primary=True)
    mode = f.choice("mode", tuple(Mode))
    provider = _provider(f, r.catalog)
    fallbacks = _fallbacks(f, r.catalog)
    allow_fallbacks = f.boolean("allow_fallbacks")
    session_affinity, cache_affinity = f.boolean("session_affinity"), f.boolean("cache_affinity")
    if model is None or fallbacks is None or len(r.problems) > mark:
        return None
    return ModelNode(
        node_id,
        model,
        Mode(mode) if mode else None,
        provider,
        fallbacks,
        allow_fallbacks is not False,
        session_affinity,
        cache_affinity,
    )


def _model_name(
    f: Fields, key: str, raw: str, catalog: CatalogNames, *, primary: bool
) -> str | None:
    """`requested`, an auto alias (primary only: the auto router has its own fallbacks,
    and a request's chain refuses auto too), a virtual model, or a catalog spelling
    resolved to its canonical slug."""
    text = raw.strip()
    if text == REQUESTED:
        return REQUESTED
    if text.lower() in AUTO_ALIASES:
        if primary:
            return AUTO
        f.error(key, "an auto alias cannot be a fallback model")
        return None
    if text in catalog.virtual:
        return text
    slug = resolve_model_name(catalog.names, text)
    if slug is None:
        f.error(key, f"unknown model {text!r}")
    return slug


def _fallbacks(f: Fields, catalog: CatalogNames) -> tuple[str, ...] | None:
    values = f.strings("fallbacks", allow_empty=True)
    if values is None:
        return None if f.present("fallbacks", False) else ()
    if len(values) > MAX_FALLBACK_MODELS:  # counted as written, as a request's (D-5)
        f.error("fallbacks", f"at most {MAX_FALLBACK_MODELS} fallback models, got {len(values)}")
    names = [
        _model_name(f, f"fallbacks[{i}]", v, catalog, primary=False) for i, v in enumerate(values)
    ]
    if None in names or len(values) > MAX_FALLBACK_MODELS:
        return None
    return tuple(dict.fromkeys(name for name in names if name is not None))


def _provider(f: Fields, catalog: CatalogNames) -> ProviderPrefs | None:
    """parse_provider stops at its first problem, so at most one is reported for the
    object's shape; then every provider slug it names must be in the catalog."""
    raw = f.get("provider")
    if raw is None:
        return None
    try:
        prefs = parse_provider(raw)
    except ResolveError as error:
        f.error(error.param, error.message.removeprefix(f"`{error.param}` "))
        return None
    known = {slug.lower() for slug in catalog.providers}
    for key in ("only", "ignore", "order"):
        for index, item in enumerate(_as_mapping(raw).get(key) or ()):
            if item.strip().lower() not in known:
                f.error(f"provider.{key}[{index}]", f"unknown provider {item!r}")
    return prefs


def _as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def read_reject(f: Fields, node_id: str, r: Reading) -> Node | None:
    status = f.choice("status", REJECT_STATUSES, required=True)
    message = f.text("message", required=True)
    if status is None or message is None:
        return None
    return RejectNode(node_id, status, message)


READERS: dict[str, NodeReader] = {
    "condition": read_condition,
    "split": read_split,
    "rate_limit": read_rate_limit,
    "budget": read_budget,
    "model": read_model,
    "reject": read_reject,
}
