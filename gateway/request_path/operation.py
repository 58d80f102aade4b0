"""What differs between the operations the request path serves (chat completions,
responses, embeddings, explain, and later Anthropic messages): how a body is parsed into
the body to route, and how the outcome is rendered. Everything between is the same path
(serve.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.http import HttpResponseBase

from gateway.errors import ApiError, render_error
from gateway.request_path.caller import Caller
from gateway.request_path.decide import Plan
from gateway.request_path.record import RequestRecord
from gateway.request_path.resolve import Resolved
from gateway.upstream.execute import Outcome
from gateway.upstream.target import Target


@dataclass(frozen=True, slots=True)
class Parsed:
    """Step 2's result: the body to route and send, and what the answer must report."""

    body: dict[str, Any]
    stream: bool = False
    echo: dict[str, Any] = field(default_factory=dict)  # request settings a reply echoes
    # A Messages request as the client sent it, for upstreams that speak its API (R-API-9).
    native: dict[str, Any] | None = None


class Finish(Protocol):
    """Record the finished request (step 7); called once, when the answer is complete."""

    def __call__(
        self,
        *,
        status: int,
        target: Target | None = None,
        usage: dict[str, Any] | None = None,
        error_code: str = "",
        ttfb_ms: int | None = None,
        stream_broke: bool = False,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Served:
    """Everything an operation renders its answer from."""

    caller: Caller
    record: RequestRecord
    parsed: Parsed
    resolved: Resolved
    plan: Plan
    outcome: Outcome | None  # None for a dry run
    finish: Finish | None  # None for a dry run: it records nothing


@dataclass(frozen=True, slots=True)
class Operation:
    name: str  # as traced: chat.completions | responses | embeddings | routing.explain
    parse: Callable[[dict[str, Any]], Parsed]
    render: Callable[[Served], HttpResponseBase]
    render_error: Callable[[ApiError], HttpResponseBase] = render_error  # the API's envelope
    routes_as: str = "chat"  # the engine's operation (chat | embeddings)
    smart: bool = True  # smart tiers and the auto router apply
    dry_run: bool = False  # decide and stop: no upstream call, no effect applied (D-21)

    @property
    def route_name(self) -> str:
        """What a route's `endpoint` condition sees: explain explains a chat completion."""
        return "chat.completions" if self.dry_run else self.name
