"""The auto router's classification step (SPEC R-AUTO-2): before an auto request is decided,
work out its workload mix and complexity — locally, or by asking the workspace's classifier
model and falling back to the local verdict on any failure.

The LLM classifier is a real child request through the gateway's own path (`route_and_execute`):
same workspace, key and billing, its own trace with `purpose=auto_routing_classifier` and
the parent's trace id, a strict timeout, and a schema check of the answer. Its failure never
fails the client's request; the child trace records what went wrong and the parent's trace
says which verdict it used and why.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from gateway import metrics
from gateway.api import report
from gateway.api.context import CallContext
from gateway.api.errors import ApiError
from routing.auto_classify import (
    WorkloadVerdict,
    classifier_body,
    classify_locally,
    parse_classifier_reply,
)
from routing.resolve import ResolveError, UnknownModel, resolve
from routing.types import RoutingRequest

log = logging.getLogger(__name__)
PURPOSE = "auto_routing_classifier"


class _NoHeaders:
    """The child request carries none of the client's headers: no route seed, session or
    tier override of the parent's may steer the classifier call."""

    headers = MappingProxyType({})


async def classify_auto(
    ctx: CallContext, body: dict[str, Any], routing: RoutingRequest, *, dry_run: bool = False
) -> RoutingRequest:
    """The routing request with the auto router's workload and complexity filled in; other
    requests unchanged. `dry_run` (explain) never calls the classifier model."""
    if not routing.auto or routing.operation != "chat":
        return routing
    local = classify_locally(body)
    verdict, classifier = local, None
    model = ctx.workspace.auto.classifier_model
    if model is not None:
        if dry_run:  # explain calls no model and moves no counter (SPEC D-21)
            classifier = {"model": model, "outcome": "not_called_in_explain"}
        else:
            verdict, classifier = await _ask_classifier(ctx, body, model, local)
            metrics.AUTO_CLASSIFIER.labels(classifier["outcome"]).inc()
    ctx.auto = {"workload": verdict.as_json(), "classifier": classifier}
    task = routing.task if routing.task_source == "request" else verdict.task
    return replace(routing, task=task, complexity=verdict.complexity)


async def _ask_classifier(
    ctx: CallContext, body: dict[str, Any], model: str, local: WorkloadVerdict
) -> tuple[WorkloadVerdict, dict[str, Any]]:
    from gateway.api.pipeline import route_and_execute  # the one request path, not a copy

    child = CallContext(
        request_id=ctx.request_id,
        snapshot=ctx.snapshot,
        key=ctx.key,
        workspace=ctx.workspace,
        operation="chat.completions",
        purpose=PURPOSE,
        parent_id=ctx.trace_id,
        key_secret=ctx.key_secret,
    )
    summary: dict[str, Any] = {"model": model, "trace_id": str(child.trace_id)}
    child_body = classifier_body(body, model)
    timeout_s = ctx.workspace.auto.classifier_timeout_s
    status, target, usage, error_code, verdict = 200, None, None, "", None
    try:
        routing = _child_routing(ctx, child_body)
        outcome = await asyncio.wait_for(
            route_and_execute(child, _NoHeaders(), child_body, routing),  # type: ignore[arg-type]
            timeout=timeout_s,
        )
        target, response = outcome.target, outcome.response or {}
        usage = response.get("usage")
        verdict = parse_classifier_reply(_content(response), local)
        if verdict is None:
            error_code = "classifier_invalid_output"
    except TimeoutError:
        status, error_code = 504, "classifier_timeout"
    except ApiError as error:
        status, error_code = error.status, error.code
    summary["outcome"] = "ok" if verdict is not None else error_code
    report.finish(child, status=status, target=target, usage=usage, error_code=error_code)
    if verdict is None:
        log.info("auto-router classifier %s failed (%s); local verdict used", model, error_code)
        return local, summary
    return verdict, summary


def _child_routing(ctx: CallContext, child_body: dict[str, Any]) -> RoutingRequest:
    try:
        routing = resolve(
            child_body,
            {},
            ctx.snapshot.catalog,
            operation="chat",
            workspace_mode=ctx.workspace.policy.routing_mode,
        )
    except (ResolveError, UnknownModel) as error:
        message = getattr(error, "message", str(error))
        raise ApiError(400, message, code="classifier_unroutable") from None
    return replace(routing, session_affinity=False)


def _content(response: dict[str, Any]) -> Any:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message.get("content") if isinstance(message, dict) else None
