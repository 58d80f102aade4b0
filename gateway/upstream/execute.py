"""The only code that calls upstreams: walk the decision's attempt list with failover.

Before the commit point (the first byte written to the client) a retryable failure moves
on to the next endpoint of the already-filtered list; after it nothing is re-issued and a
broken stream ends with a well-formed SSE error event. Provider modules only translate.
One attempt is attempt.py's; relaying a committed stream to the client, relay.py's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from gateway.upstream.attempt import Opened, call_once, elapsed_ms, open_stream
from gateway.upstream.providers.anthropic_native import NativeRequest
from gateway.upstream.target import Target
from routing.engine.attempts import Attempt, AttemptFailed
from routing.engine.types import EndpointInfo


@dataclass(slots=True)
class Outcome:
    attempts: list[Attempt] = field(default_factory=list)
    target: Target | None = None
    response: dict[str, Any] | None = None  # non-stream success, as a chat completion
    message: dict[str, Any] | None = None  # the same, as a natively called upstream sent it
    opened: Opened | None = None  # stream success (not yet relayed)
    failure: AttemptFailed | None = None  # the last failure when nothing succeeded
    failures: list[AttemptFailed] = field(default_factory=list)  # every failed attempt
    ttfb_ms: int | None = None


class AttemptObserver(Protocol):
    """Told when an attempt starts and ends (the adaptive strategy's in-flight counts and
    latency samples, cooldowns): `latency_ms` is None unless it succeeded, `failure` is
    its failure (None for a success, and for an attempt cancelled by the client)."""

    def started(self, endpoint: EndpointInfo) -> None: ...

    def finished(
        self, endpoint: EndpointInfo, latency_ms: float | None, failure: AttemptFailed | None
    ) -> None: ...


async def execute(
    client: httpx.AsyncClient,
    targets: list[Target],
    body: dict[str, Any],
    *,
    operation: str,
    stream: bool,
    ids: dict,
    deadline_at: float,
    observer: AttemptObserver | None = None,
    native: NativeRequest | None = None,
) -> Outcome:
    """Try targets in order until one succeeds or a failure is final, all before
    `deadline_at` (event-loop time: the request's total deadline, SPEC R-EXE-8). An attempt
    counts as in flight until its response (non-stream) or its first token (stream).
    `native`: a Messages request, sent as it is to Anthropic-style upstreams."""
    outcome = Outcome()
    try:
        async with asyncio.timeout_at(deadline_at):
            for target in targets:
                failure = await _attempt(
                    client,
                    target,
                    body,
                    operation,
                    stream,
                    ids,
                    outcome,
                    observer,
                    deadline_at,
                    native,
                )
                if failure is None or not failure.retryable:
                    return outcome
    except TimeoutError:
        outcome.failure = AttemptFailed("timeout", "the request's total deadline passed")
        outcome.failures.append(outcome.failure)
    return outcome


async def _attempt(
    client: httpx.AsyncClient,
    target: Target,
    body: dict[str, Any],
    operation: str,
    stream: bool,
    ids: dict,
    outcome: Outcome,
    observer: AttemptObserver | None,
    deadline_at: float,
    native: NativeRequest | None,
) -> AttemptFailed | None:
    """One attempt, recorded in `outcome`; returns its failure, or None on success. The
    observer hears the end however the attempt ends (failure, deadline, cancellation)."""
    started = time.perf_counter()
    ep = target.endpoint
    sample_ms: float | None = None
    failed: AttemptFailed | None = None
    if observer is not None:
        observer.started(ep)
    try:
        if not target.api_key:
            raise AttemptFailed("no_credential", "no credential for this provider")
        if stream:
            outcome.opened = await open_stream(client, target, body, ids, deadline_at, native)
            outcome.ttfb_ms = outcome.opened.ttfb_ms
        else:
            outcome.response, outcome.message = await call_once(
                client, target, body, operation, ids, native
            )
    except AttemptFailed as failure:
        outcome.attempts.append(
            Attempt(
                ep.provider,
                ep.model,
                ep.id,
                "error",
                failure.http_status,
                elapsed_ms(started),
                failure.message,
                failure.retry_after,
                own_credential=target.own_credential,
                failure_kind=failure.kind,
            )
        )
        outcome.failure = failed = failure
        outcome.failures.append(failure)
        return failure
    else:
        latency_ms = elapsed_ms(started)
        sample_ms = float(latency_ms)
        outcome.attempts.append(
            Attempt(
                ep.provider,
                ep.model,
                ep.id,
                "ok",
                200,
                latency_ms,
                own_credential=target.own_credential,
            )
        )
        outcome.target = target
        outcome.failure = None
        return None
    finally:
        if observer is not None:
            observer.finished(ep, sample_ms, failed)
