"""The auto router in the resolve step (SPEC R-AUTO-2): before an auto request is decided,
work out its workload mix and complexity — locally, or by asking the workspace's classifier
model and falling back to the local verdict on any failure.

The LLM classifier is a real child request through the gateway's own path: the request path
hands this step a `ChildRequest` callable (serve.py `child_request`), so this module does
not import the path that imports it. Same workspace, key and billing, its own trace with
`purpose=auto_routing_classifier` and the parent's trace id, a strict timeout, and a schema
check of the answer. Its failure never fails the client's request; the child trace records
what went wrong and the parent's trace says which verdict it used and why. A dry run
(explain) passes no callable: no model is called.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from gateway import metrics
from gateway.errors import ApiError
from gateway.request_path.caller import Caller
from gateway.state.request_state import Effects
from routing.engine.auto.classify import (
    WorkloadVerdict,
    classifier_body,
    classify_locally,
    parse_classifier_reply,
)
from routing.engine.resolve import ResolveError, UnknownModel, resolve
from routing.engine.types import RoutingRequest

log = logging.getLogger(__name__)
PURPOSE = "auto_routing_classifier"


class ChildRequest(Protocol):
    """Serve a request the gateway makes itself and record its trace; returns its error
    code ("" on success). `judge` reads the answer and returns an error code for it."""

    def __call__(
        self,
        child: Caller,
        body: dict[str, Any],
        routing: Callable[[], RoutingRequest],
        timeout_s: float,
        judge: Callable[[dict[str, Any]], str],
    ) -> Awaitable[str]: ...


@dataclass(frozen=True, slots=True)
class AutoVerdict:
    routing: RoutingRequest  # with the workload's task and complexity filled in
    record: dict[str, Any]  # the trace's and explain's `auto` (R-AUTO-2)


async def classify_auto(
    caller: Caller,
    body: dict[str, Any],
    routing: RoutingRequest,
    ask: ChildRequest | None,
    effects: Effects,
) -> AutoVerdict | None:
    """The auto router's verdict for an auto chat request; None for any other request."""
    if not routing.auto or routing.operation != "chat":
        return None
    local = classify_locally(body)
    verdict, classifier = local, None
    model = caller.workspace.auto.classifier_model
    if model is not None:
        if ask is None:  # explain calls no model and moves no counter (SPEC D-21)
            classifier = {"model": model, "outcome": "not_called_in_explain"}
        else:
            verdict, classifier = await _ask_classifier(caller, body, routing, model, local, ask)
            effects.count(metrics.AUTO_CLASSIFIER, classifier["outcome"])
    task = routing.task if routing.task_source == "request" else verdict.task
    return AutoVerdict(
        routing=replace(routing, task=task, complexity=verdict.complexity),
        record={"workload": verdict.as_json(), "classifier": classifier},
    )


async def _ask_classifier(
    caller: Caller,
    body: dict[str, Any],
    routing: RoutingRequest,
    model: str,
    local: WorkloadVerdict,
    ask: ChildRequest,
) -> tuple[WorkloadVerdict, dict[str, Any]]:
    child = caller.child(PURPOSE)
    summary: dict[str, Any] = {"model": model, "trace_id": str(child.trace_id)}
    answer: list[WorkloadVerdict] = []

    def judge(response: dict[str, Any]) -> str:
        verdict = parse_classifier_reply(_content(response), local)
        if verdict is None:
            return "classifier_invalid_output"
        answer.append(verdict)
        return ""

    child_body = classifier_body(body, model)
    error_code = await ask(
        child,
        child_body,
        lambda: _child_routing(caller, child_body, routing.data_class),
        caller.workspace.auto.classifier_timeout_s,
        judge,
    )
    summary["outcome"] = "ok" if answer else error_code
    if not answer:
        log.info("auto-router classifier %s failed (%s); local verdict used", model, error_code)
        return local, summary
    return answer[0], summary


def _child_routing(
    caller: Caller, child_body: dict[str, Any], data_class: str | None
) -> RoutingRequest:
    """The classifier request carries none of the client's headers: no route seed, session
    or tier override of the parent's may steer it. It carries the client's text, so it
    keeps the client's data class (D-22)."""
    try:
        routing = resolve(
            child_body,
            {},
            caller.snapshot.catalog,
            operation="chat",
            workspace_mode=caller.workspace.policy.routing_mode,
        )
    except (ResolveError, UnknownModel) as error:
        message = getattr(error, "message", str(error))
        raise ApiError(400, message, code="classifier_unroutable") from None
    return replace(routing, session_affinity=False, data_class=data_class)


def _content(response: dict[str, Any]) -> Any:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message.get("content") if isinstance(message, dict) else None
