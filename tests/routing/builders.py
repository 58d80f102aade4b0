"""Builders of routing values for tests (no database)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from routing.types import EndpointInfo, PolicyView, RouteRequest

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


def make_endpoint(**fields: Any) -> EndpointInfo:
    if "capabilities" in fields:
        fields["capabilities"] = frozenset(fields["capabilities"])
    return replace(_BASE, **fields)


def make_policy(**fields: Any) -> PolicyView:
    for name in ("allowed_residency", "allowed_regions", "provider_allow", "provider_deny",
                 "model_allow", "model_deny"):  # fmt: skip
        if name in fields:
            fields[name] = frozenset(fields[name])
    return PolicyView(**fields)


def make_request(**fields: Any) -> RouteRequest:
    fields.setdefault("model", _BASE.model)
    return RouteRequest(**fields)
