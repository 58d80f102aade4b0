"""Builders of routing values for tests (no database).

Collections may be given as lists; `provider` as a dict of `ProviderPrefs` fields (with
`preferred_max_latency` a dict of `LatencyTarget` fields); `stats` as a dict of id →
`EndpointStats` fields. `route` runs `decide` with neutral defaults for what a test omits.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from routing.engine.decide import decide
from routing.engine.types import (
    Decision,
    EndpointInfo,
    EndpointStats,
    LatencyTarget,
    LiveState,
    Mode,
    PolicyView,
    ProviderPrefs,
    RoutingRequest,
)

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z; no decision depends on it yet

_BASE = EndpointInfo(
    id="ep-a",
    provider="prov-a",
    model="meta/llama-3.3-70b",
    upstream_model="llama-3.3-70b",
    region="eu-west-1",
    status="active",
    sovereignty_class="eu-hosted",
    partner=False,
    price_input=1.0,
    price_output=2.0,
    capabilities=frozenset({"text", "tools"}),
    context_window=8192,
)
_ENDPOINT_SETS = ("capabilities", "strong_languages", "task_tags", "data_classes")
_POLICY_SETS = (
    "allowed_residency",
    "allowed_regions",
    "provider_allow",
    "provider_deny",
    "model_allow",
    "model_deny",
)
_PREFS_SETS = ("only", "ignore", "regions")


def make_endpoint(**fields: Any) -> EndpointInfo:
    for name in _ENDPOINT_SETS:
        if name in fields:
            fields[name] = frozenset(fields[name])
    return replace(_BASE, **fields)


def make_policy(**fields: Any) -> PolicyView:
    for name in _POLICY_SETS:
        if name in fields:
            fields[name] = frozenset(fields[name])
    return PolicyView(**fields)


def make_prefs(**fields: Any) -> ProviderPrefs:
    for name in _PREFS_SETS:
        if name in fields:
            fields[name] = frozenset(fields[name])
    if "order" in fields:
        fields["order"] = tuple(fields["order"])
    if isinstance(fields.get("preferred_max_latency"), dict):
        fields["preferred_max_latency"] = LatencyTarget(**fields["preferred_max_latency"])
    if isinstance(fields.get("sort"), str):
        fields["sort"] = Mode(fields["sort"])
    return ProviderPrefs(**fields)


def make_request(**fields: Any) -> RoutingRequest:
    if fields.get("auto"):
        fields.setdefault("model", None)
        fields.setdefault("requested_model", "auto")
    fields.setdefault("model", _BASE.model)
    fields.setdefault("requested_model", fields["model"])
    if isinstance(fields.get("provider"), dict):
        fields["provider"] = make_prefs(**fields["provider"])
    if isinstance(fields.get("mode"), str):
        fields["mode"] = Mode(fields["mode"])
    return RoutingRequest(**fields)


def make_live(
    stats: dict[str, dict[str, Any]] | None = None, unhealthy: Sequence[str] = ()
) -> LiveState:
    return LiveState(
        stats={eid: EndpointStats(**values) for eid, values in (stats or {}).items()},
        unhealthy=frozenset(unhealthy),
    )


def route(
    endpoints: Sequence[EndpointInfo],
    request: RoutingRequest | None = None,
    policy: PolicyView | None = None,
    live: LiveState | None = None,
    seed: int = 0,
    **options: Any,
) -> Decision:
    return decide(
        endpoints,
        request if request is not None else make_request(),
        policy if policy is not None else make_policy(),
        live if live is not None else LiveState(),
        random.Random(seed),
        NOW,
        **options,
    )


def ids(decision: Decision) -> list[str]:
    return [endpoint.id for endpoint in decision.ordered]
