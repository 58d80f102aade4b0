"""`POST /v1/embeddings` (SPEC R-API-1): routed like chat, without smart tiers or the
auto router (they read conversations), answered with the upstream's body."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase

from gateway.api.wire import json_response
from gateway.request_path.operation import Operation, Parsed, Served
from gateway.request_path.parse import validate_embeddings


def parse_embeddings(body: dict[str, Any]) -> Parsed:
    validate_embeddings(body)
    return Parsed(body=body)


def render_embeddings(served: Served) -> HttpResponseBase:
    outcome, finish = served.outcome, served.finish
    assert outcome is not None
    assert finish is not None
    response = outcome.response or {}
    usage = response.get("usage")
    finish(status=200, target=outcome.target, usage=usage)
    return json_response(response)


EMBEDDINGS = Operation(
    "embeddings",
    parse=parse_embeddings,
    render=render_embeddings,
    routes_as="embeddings",
    smart=False,
)
