"""The only code that calls upstreams: walk the decision's attempt list with failover.

Before the commit point (the first byte written to the client) a retryable failure moves
on to the next endpoint of the already-filtered list; after it nothing is re-issued and a
broken stream ends with a well-formed SSE error event. Provider modules only translate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from gateway.attempts import Attempt, AttemptFailed, is_retryable_status, retry_after_seconds
from gateway.providers import anthropic, openai
from routing.types import EndpointInfo

MAX_ERROR_BODY_BYTES = 64 * 1024
CLIENT_DISCONNECTED = "client disconnected"  # the one stream ending that is nobody's fault


@dataclass(frozen=True, slots=True)
class Target:
    """An endpoint ready to call: where, how, with which credential and timeouts."""

    endpoint: EndpointInfo
    base_url: str
    api_style: str  # openai | anthropic
    api_key: str
    connect_timeout_s: float
    ttfb_timeout_s: float
    idle_timeout_s: float


@dataclass(slots=True)
class Opened:
    """A stream that passed its commit check: frames buffered so far plus the rest."""

    target: Target
    response: httpx.Response
    translator: Any
    chunks: AsyncIterator[bytes]
    buffered: list[bytes]
    started_at: float
    ttfb_ms: int


@dataclass(slots=True)
class Outcome:
    attempts: list[Attempt] = field(default_factory=list)
    target: Target | None = None
    response: dict[str, Any] | None = None  # non-stream success
    opened: Opened | None = None  # stream success (not yet relayed)
    failure: AttemptFailed | None = None  # the last failure when nothing succeeded
    failures: list[AttemptFailed] = field(default_factory=list)  # every failed attempt
    ttfb_ms: int | None = None


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _build(target: Target, body: dict[str, Any], stream: bool, operation: str) -> httpx.Request:
    try:
        return _build_request(target, body, stream, operation)
    except ValueError as exc:
        # This upstream's API cannot express the request (e.g. `n` > 1 for Anthropic);
        # another endpoint may, so it counts as a retryable attempt failure.
        raise AttemptFailed("unsupported_request", str(exc)) from None


def _build_request(
    target: Target, body: dict[str, Any], stream: bool, operation: str
) -> httpx.Request:
    ep = target.endpoint
    if operation == "embeddings":
        headers, content = openai.build_embeddings_request(body, ep.upstream_model, target.api_key)
        url = f"{target.base_url}/embeddings"
    elif target.api_style == "anthropic":
        headers, content = anthropic.build_request(
            body, ep.upstream_model, target.api_key, stream=stream
        )
        url = f"{target.base_url}/messages"
    else:
        headers, content = openai.build_request(
            body, ep.upstream_model, target.api_key, stream=stream
        )
        url = f"{target.base_url}/chat/completions"
    headers["accept-encoding"] = "identity"
    return httpx.Request("POST", url, headers=headers, content=content)


async def _send(
    client: httpx.AsyncClient, request: httpx.Request, target: Target
) -> httpx.Response:
    """Send and wait for the response head within connect + first-byte time."""
    try:
        async with asyncio.timeout(target.connect_timeout_s + target.ttfb_timeout_s):
            return await client.send(request, stream=True)
    except TimeoutError:
        raise AttemptFailed("timeout", "upstream did not answer in time") from None
    except httpx.HTTPError as exc:
        raise AttemptFailed("connect_error", f"{type(exc).__name__}") from None


async def _fail_from_status(response: httpx.Response, target: Target) -> AttemptFailed:
    try:
        async with asyncio.timeout(target.idle_timeout_s):
            data = await response.aread()
    except (TimeoutError, httpx.HTTPError):
        data = b""
    finally:
        await response.aclose()
    module = anthropic if target.api_style == "anthropic" else openai
    _kind, message = module.parse_error(response.status_code, data[:MAX_ERROR_BODY_BYTES])
    return AttemptFailed(
        "http_error",
        message or f"HTTP {response.status_code}",
        http_status=response.status_code,
        retryable=is_retryable_status(response.status_code, response.headers.get("x-should-retry")),
        retry_after=response.headers.get("retry-after"),
    )


async def call_once(
    client: httpx.AsyncClient, target: Target, body: dict[str, Any], operation: str, ids: dict
) -> dict[str, Any]:
    """One non-streaming attempt -> OpenAI-shaped response dict, or AttemptFailed."""
    response = await _send(client, _build(target, body, False, operation), target)
    if response.status_code != 200:
        raise await _fail_from_status(response, target)
    try:
        async with asyncio.timeout(target.idle_timeout_s):
            data = await response.aread()
    except TimeoutError:
        raise AttemptFailed("timeout", "upstream body did not arrive in time") from None
    except httpx.HTTPError as exc:
        raise AttemptFailed("connect_error", f"{type(exc).__name__} reading body") from None
    finally:
        await response.aclose()
    slug = target.endpoint.model
    try:
        if target.api_style == "anthropic" and operation != "embeddings":
            return anthropic.parse_response(data, model=slug, **ids)
        return openai.parse_response(data, model=slug)
    except (ValueError, KeyError, TypeError):
        raise AttemptFailed("malformed", "upstream sent a malformed response") from None


async def open_stream(
    client: httpx.AsyncClient, target: Target, body: dict[str, Any], ids: dict
) -> Opened:
    """Start a streaming attempt and read until its first content frame (the commit check):
    an error, a malformed frame or an early end before that is still a failed attempt."""
    started = time.perf_counter()
    response = await _send(client, _build(target, body, True, "chat"), target)
    if response.status_code != 200:
        raise await _fail_from_status(response, target)
    ep = target.endpoint
    if target.api_style == "anthropic":
        translator: Any = anthropic.StreamTranslator(model=ep.model, **ids)
    else:
        translator = openai.StreamTranslator(model=ep.model, upstream_model=ep.upstream_model)
    buffered: list[bytes] = []
    chunks = response.aiter_bytes()
    try:
        async with asyncio.timeout(target.ttfb_timeout_s):
            while not translator.emitted_content:
                chunk = await anext(chunks, None)
                if chunk is None:
                    raise AttemptFailed("stream_error", "upstream stream ended before any content")
                buffered.extend(translator.feed(chunk))
                if translator.error:
                    raise AttemptFailed("stream_error", translator.error[1] or translator.error[0])
    except TimeoutError:
        await response.aclose()
        raise AttemptFailed("timeout", "no first token in time") from None
    except httpx.HTTPError as exc:
        await response.aclose()
        raise AttemptFailed("connect_error", f"{type(exc).__name__} before first token") from None
    except AttemptFailed:
        await response.aclose()
        raise
    return Opened(target, response, translator, chunks, buffered, started, _elapsed_ms(started))


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
    deadline_s: float,
    observer: AttemptObserver | None = None,
) -> Outcome:
    """Try targets in order until one succeeds or a failure is final. An attempt counts as
    in flight until its response (non-stream) or its first token (stream)."""
    outcome = Outcome()
    try:
        async with asyncio.timeout(deadline_s):
            for target in targets:
                failure = await _attempt(client, target, body, operation, stream, ids, outcome,
                                         observer)  # fmt: skip
                if failure is None or not failure.retryable:
                    return outcome
    except TimeoutError:
        outcome.failure = AttemptFailed("timeout", "the request's total deadline passed")
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
            outcome.opened = await open_stream(client, target, body, ids)
            outcome.ttfb_ms = outcome.opened.ttfb_ms
        else:
            outcome.response = await call_once(client, target, body, operation, ids)
    except AttemptFailed as failure:
        outcome.attempts.append(
            Attempt(
                ep.provider,
                ep.model,
                ep.id,
                "error",
                failure.http_status,
                _elapsed_ms(started),
                failure.message,
                retry_after_seconds(failure.retry_after),
            )  # fmt: skip
        )
        outcome.failure = failed = failure
        outcome.failures.append(failure)
        return failure
    else:
        latency_ms = _elapsed_ms(started)
        sample_ms = float(latency_ms)
        outcome.attempts.append(Attempt(ep.provider, ep.model, ep.id, "ok", 200, latency_ms))
        outcome.target = target
        outcome.failure = None
        return None
    finally:
        if observer is not None:
            observer.finished(ep, sample_ms, failed)


async def relay(
    opened: Opened,
    *,
    tail: Callable[[Opened, str | None], list[bytes]],
    on_end: Callable[[Opened, str | None], None],
) -> AsyncIterator[bytes]:
    """Yield a committed stream to the client: buffered frames, the rest of the upstream,
    then `tail(opened, error)` (the switchyard block and [DONE], or an error event).
    A client disconnect cancels this generator; `finally` closes the upstream and
    `on_end` records the outcome whichever way the stream ended."""
    chunks = opened.chunks
    translator = opened.translator
    error: str | None = None
    completed = False
    try:
        for frame in opened.buffered:
            yield frame
        while not translator.finished:
            try:
                async with asyncio.timeout(opened.target.idle_timeout_s):
                    chunk = await anext(chunks, None)
            except TimeoutError:
                error = "upstream stream stalled"
                break
            except httpx.HTTPError:
                error = "upstream stream broke"
                break
            if chunk is None:
                if not translator.finished:
                    error = "upstream stream ended early"
                break
            frames = translator.feed(chunk)
            if frames:
                yield b"".join(frames)
            if translator.error:
                error = translator.error[1] or translator.error[0]
                break
        for frame in tail(opened, error):
            yield frame
        completed = True
    finally:
        if not completed and error is None:
            error = CLIENT_DISCONNECTED  # cancelled or closed while relaying
        await asyncio.shield(opened.response.aclose())
        on_end(opened, error)
