"""`POST /v1/routing/explain` (SPEC R-BEY-2, D-21): the decision for this chat body and no
upstream call. It runs the same steps as the chat request up to decide, as a dry run: the
request path applies none of their effects — no round-robin turn, pin or counter — so the
next real request is routed as if it never ran, and the same seed gives the same decision
as that request."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase

from gateway.api.wire import json_response
from gateway.request_path.decision_record import request_json
from gateway.request_path.operation import Operation, Parsed, Served
from gateway.request_path.parse import validate_chat


def parse_explained(body: dict[str, Any]) -> Parsed:
    validate_chat(body)
    return Parsed(body=body)


def render_explanation(served: Served) -> HttpResponseBase:
    plan, resolved = served.plan, served.resolved
    decisions = [plan.entry(plan.decide(model)[0], model) for model in plan.models]
    attempt_order = [eid for d in decisions for eid in d["ordered"]]
    return json_response(
        {
            "object": "switchyard.routing_explanation",
            "request": request_json(resolved.routing),
            "tier": resolved.tier.as_json() if resolved.tier else None,
            "auto": resolved.auto,
            "route": resolved.route.as_json() if resolved.route else None,
            "decisions": decisions,
            "attempt_order": attempt_order,
            "reason": decisions[0]["reason"] if decisions else "",
        }
    )


EXPLAIN = Operation(
    "routing.explain", parse=parse_explained, render=render_explanation, dry_run=True
)
