"""Replay (SPEC R-BEY-3, D-25): what a route version would have done to the requests
already served — from the decision inputs their traces keep, calling no upstream and
reading no content.

For each recorded request of the route's keys in the window (the route's own, or of its
keys while no other route handled them), the version is walked again with the request's
stored facts and the key's usage as it was then (routing/engine/routes/evaluate.py); the
model its model node names is decided again by the engine (routing/engine/decide.py) with
the request's seed, the key's scope, today's catalog and neutral live metrics. The report
counts the requests that would end at another node, model or endpoint, those that would
now be refused, and the cost difference at the predicted endpoint's prices for the tokens
each request used. With live metrics that no longer hold (a `balanced` or `latency` mode
that weighed them) the endpoint is an estimate; node and model are exact.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from audit.models import RequestTrace
from presets.models import KeySettings, Route
from routing.engine.decide import decide
from routing.engine.names import resolve_model_name
from routing.engine.resolve import parse_provider
from routing.engine.routes import (
    AUTO,
    REQUESTED,
    ModelNode,
    RouteFacts,
    evaluate,
    narrow_provider,
    parse_route,
    route_for,
)
from routing.engine.routes import Route as RouteGraph
from routing.engine.types import AUTO_ALIASES, EndpointInfo, LiveState, Mode, RoutingRequest

SAMPLE_SIZE = 20  # trace ids listed in the report
DURATION_UNITS = {"m": 60, "h": 3600, "d": 86400}
MAX_TRACES = 100_000
REFUSED_STATUS = 400  # a served request answered below this; a refusal is a 4xx


class Configuration(Protocol):
    """What replay reads of the gateway's configuration snapshot (`Snapshot`,
    gateway/state/snapshot_types.py), which the caller loads and hands in."""

    @property
    def catalog(self) -> Any: ...
    @property
    def names(self) -> Any: ...
    @property
    def virtual(self) -> Any: ...
    @property
    def endpoints(self) -> Mapping[str, Any]: ...
    @property
    def workspaces(self) -> Mapping[int, Any]: ...
    @property
    def keys(self) -> Mapping[Any, Any]: ...


def parse_duration(text: str) -> float:
    """`30m`, `24h`, `7d` as seconds (D-25); ValueError for anything else."""
    if len(text) < 2 or text[-1] not in DURATION_UNITS or not text[:-1].isdigit():
        raise ValueError(f"{text!r} is not a duration such as 30m, 24h or 7d")
    return float(int(text[:-1]) * DURATION_UNITS[text[-1]])


@dataclass
class ReplayReport:
    route: str
    version: int
    deployed: int | None
    since_s: float
    total: int = 0
    changed: dict[str, int] = field(default_factory=lambda: {"node": 0, "model": 0, "endpoint": 0})
    refused: int = 0
    newly_refused: int = 0  # refused by the version, answered when they were served
    cost_delta_micros: int = 0
    sample: list[str] = field(default_factory=list)
    predictions: dict[str, dict[str, Any]] = field(default_factory=dict)  # by trace id

    def as_json(self, *, with_predictions: bool = False) -> dict[str, Any]:
        """D-25's report: total, changed, refused, cost_delta_usd and sample."""
        report: dict[str, Any] = {
            "route": self.route,
            "version": self.version,
            "deployed": self.deployed,
            "since_s": self.since_s,
            "total": self.total,
            "changed": dict(self.changed),
            "refused": self.refused,
            "newly_refused": self.newly_refused,
            "cost_delta_usd": self.cost_delta_micros / 1_000_000,
            "sample": list(self.sample),
        }
        if with_predictions:
            report["predictions"] = self.predictions
        return report


@dataclass(frozen=True, slots=True)
class _Index:
    """The snapshot with its keys by primary key and its endpoints by id, built once per
    replay rather than searched per trace."""

    snap: Configuration
    keys: dict[int, Any]
    endpoints: dict[str, EndpointInfo]


@dataclass(frozen=True, slots=True)
class _StoredUsage:
    """The key's usage as the trace recorded it: `{period: [requests, cost_micros]}`."""

    usage: Mapping[str, list[int]]

    def requests(self, period: str) -> int:
        return int(self.usage.get(period, [0, 0])[0])

    def cost_micros(self, period: str) -> int:
        return int(self.usage.get(period, [0, 0])[1])


def replay_route(
    route: Route,
    version_number: int,
    *,
    since_s: float,
    configuration: Configuration,
    now: float | None = None,
) -> ReplayReport:
    """Replay version `version_number` of `route` over its keys' traces of the last
    `since_s` seconds, against `configuration` (today's catalog, workspaces and keys).
    Raises LookupError for an unknown version, RouteInvalid for one today's catalog no
    longer accepts."""
    version = route.versions.filter(number=version_number).first()
    if version is None:
        raise LookupError(f"route {route.slug!r} has no version {version_number}")
    snap = configuration
    graph = parse_route(version.content, path="", catalog=snap.catalog)
    now = time.time() if now is None else now
    report = ReplayReport(
        route.slug, version_number, route.deployed.number if route.deployed else None, since_s
    )
    index = _Index(
        snap,
        keys={entry.pk: entry for entry in snap.keys.values()},
        endpoints={e.id: e for endpoints in snap.endpoints.values() for e in endpoints},
    )
    for trace in _traces(route, now - since_s):
        prediction = _predict(trace, graph, index)
        if prediction is not None:
            _tally(report, trace, prediction, index)
    return report


def _traces(route: Route, since: float) -> Iterable[RequestTrace]:
    attached = KeySettings.objects.filter(workspace=route.workspace_id).names_by_route()
    names = attached.get(route.slug, [])
    rows = RequestTrace.objects.filter(
        workspace_id=route.workspace_id,
        api_key__name__in=names,
        created_at__gte=datetime.fromtimestamp(since, tz=UTC),
        purpose="",
    ).order_by("-created_at")
    return rows[:MAX_TRACES].iterator()


def _predict(trace: RequestTrace, graph: RouteGraph, index: _Index) -> dict[str, Any] | None:
    """The node, model and endpoint the version would give the trace's request; None when
    the trace cannot be replayed (no stored inputs, or another route handled it)."""
    decision = trace.decision or {}
    inputs = decision.get("route_inputs")
    if not inputs or trace.route not in ("", graph.slug) or not inputs.get("requested_model"):
        return None
    requested = str(inputs["requested_model"])
    snap = index.snap
    if route_for([graph], requested) is None:
        return {
            "node": "",
            "model": _canonical(requested, snap),
            "endpoint": None,
            "refused": False,
        }
    facts = replay_facts(inputs, key_id=trace.api_key_id or 0, operation=trace.operation)
    outcome = evaluate(graph, facts, _StoredUsage(inputs.get("usage") or {}))
    node = outcome.visited[-1].node
    if outcome.model is None:
        return {"node": node, "model": None, "endpoint": None, "refused": True}
    model = _model_of(outcome.model, requested, snap)
    endpoint = _endpoint(trace, decision, outcome.model, model, index, facts.seed)
    return {"node": node, "model": model, "endpoint": endpoint, "refused": False}


def replay_facts(inputs: Mapping[str, Any], *, key_id: int, operation: str) -> RouteFacts:
    """The facts a live walk read, from the decision inputs its trace kept
    (gateway/request_path/resolve/routes.py `route_inputs`): what a split or condition reads must
    come back equal, or the replay would predict another branch than the request took
    (tests/gateway/test_replay_facts.py holds the two sides together)."""
    return RouteFacts(
        body=inputs.get("body") or {},
        headers=inputs.get("headers") or {},
        metadata=inputs.get("metadata") or {},
        operation=str(inputs.get("operation") or operation),
        requested_model=str(inputs["requested_model"]),
        session_id=inputs.get("session_id"),
        prompt_cache_key=inputs.get("prompt_cache_key"),
        key_id=key_id,
        seed=int(inputs.get("seed") or 0),
    )


def _canonical(name: str, snap: Configuration) -> str | None:
    if name in AUTO_ALIASES:
        return AUTO
    base = name.split(":", 1)[0] if name.count(":") == 1 and "/" in name else name
    return resolve_model_name(snap.names, base) or (base if base in snap.virtual else None)


def _model_of(node: ModelNode, requested: str, snap: Configuration) -> str | None:
    return _canonical(requested, snap) if node.model == REQUESTED else node.model


def _endpoint(
    trace: RequestTrace,
    decision: Mapping[str, Any],
    node: ModelNode,
    model: str | None,
    index: _Index,
    seed: int,
) -> str | None:
    """The first endpoint the engine would try for `model`; None for auto and virtual
    models (their choice depends on state a trace does not keep)."""
    snap = index.snap
    if model is None or model == AUTO or model not in snap.endpoints:
        return None
    workspace = snap.workspaces.get(trace.workspace_id)
    key = index.keys.get(trace.api_key_id) if trace.api_key_id is not None else None
    if workspace is None:
        return None
    policy = (key.policy if key else None) or workspace.policy
    request = _request(
        decision.get("request") or {},
        decision.get("route_inputs") or {},
        model,
        workspace.policy.routing_mode,
    )
    request = replace(request, provider=narrow_provider(request.provider, node.provider))
    if node.mode is not None and request.mode_source not in ("suffix", "request"):
        request = replace(request, mode=node.mode, mode_source="route")
    chosen = decide(
        snap.endpoints[model],
        request,
        policy,
        LiveState(),
        random.Random(seed),
        trace.created_at.timestamp(),
    )
    return chosen.ordered[0].id if chosen.ordered else None


def _request(
    stored: Mapping[str, Any], inputs: Mapping[str, Any], model: str, workspace_mode: str
) -> RoutingRequest:
    """The request for `model` as the client sent it: the resolved facts the trace keeps
    (decision_record.request_json) with the client's own `provider` object and mode, not
    what the route that served it made of them."""
    mode_source = str(stored.get("mode_source") or "default")
    if mode_source in ("suffix", "request"):
        mode = Mode(stored.get("mode") or "balanced")
    else:
        mode, mode_source = Mode(workspace_mode or "balanced"), "workspace"
    return RoutingRequest(
        requested_model=model,
        model=model,
        mode=mode,
        mode_source=mode_source,
        provider=parse_provider(inputs.get("provider")),
        residency=stored.get("residency"),
        data_class=stored.get("data_class"),
        task=str(stored.get("task") or "general"),
        language=stored.get("language"),
        has_image=bool(stored.get("has_image")),
        has_tools=bool(stored.get("has_tools")),
        input_tokens=int(stored.get("input_tokens") or 0),
        output_tokens=int(stored.get("output_tokens") or 0),
    )


def _tally(
    report: ReplayReport, trace: RequestTrace, prediction: dict[str, Any], index: _Index
) -> None:
    report.total += 1
    trace_id = str(trace.id)
    decision = trace.decision or {}
    report.predictions[trace_id] = {
        **prediction,
        "session_id": (decision.get("route_inputs") or {}).get("session_id"),
    }
    was_model = _served_model(decision)
    differs = {
        "node": prediction["node"] != trace.route_node,
        "model": prediction["model"] != was_model,
        "endpoint": prediction["endpoint"] is not None and prediction["endpoint"] != trace.endpoint,
    }
    for what, changed in differs.items():
        report.changed[what] += changed
    if prediction["refused"]:
        report.refused += 1
        report.newly_refused += trace.status_code < REFUSED_STATUS
        report.cost_delta_micros -= trace.cost_micros
    elif prediction["endpoint"] and trace.usage:
        predicted = _cost(trace.usage, index.endpoints.get(prediction["endpoint"]))
        report.cost_delta_micros += predicted - trace.cost_micros
    if any(differs.values()) and len(report.sample) < SAMPLE_SIZE:
        report.sample.append(trace_id)


def _served_model(decision: Mapping[str, Any]) -> str | None:
    """The model the request was routed to: its route's choice, else the one it asked for."""
    if decision.get("route"):
        return decision["route"].get("model")
    request = decision.get("request") or {}
    return AUTO if request.get("auto") else request.get("model")


def _cost(usage: Mapping[str, Any], endpoint: EndpointInfo | None) -> int:
    if endpoint is None:
        return 0
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    return round(prompt * endpoint.price_input + completion * endpoint.price_output)
