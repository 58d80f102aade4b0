"""One attempt against one target: the request built for the target's API style (a
provider adapter's translation, or the client's Messages request as it is), sent, and its
answer classified. `call_once` reads a non-streaming answer; `open_stream` reads a stream
up to its commit check (the first content frame) and hands it on as `Opened`. A failure,
an error object inside a 200 answer included (SPEC D-18), is raised as AttemptFailed with
the upstream response already closed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from gateway.upstream.close import close_response, drop_connection
from gateway.upstream.exchange import fail_from_status, read_body, send_head
from gateway.upstream.providers import anthropic, anthropic_native, openai
from gateway.upstream.providers.anthropic_native import NativeRequest
from gateway.upstream.target import Target
from routing.engine.attempts import AttemptFailed, is_retryable_status, status_of_in_band_error


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
    deadline_at: float  # the request's total deadline, in event-loop time (SPEC D-20)
    relayed: bool = False  # `relay` (or `abandon`) has taken charge of closing it


def elapsed_ms(started: float) -> int:
    """Whole milliseconds since `started`, a `time.perf_counter()` reading."""
    return int((time.perf_counter() - started) * 1000)


def _build(
    target: Target, body: dict[str, Any], stream: bool, operation: str, native: NativeRequest | None
) -> httpx.Request:
    try:
        return _build_request(target, body, stream, operation, native)
    except ValueError as exc:
        # This upstream's API cannot express the request (e.g. `n` > 1 for Anthropic);
        # another endpoint may, so it counts as a retryable attempt failure.
        raise AttemptFailed("unsupported_request", str(exc)) from None
    except (TypeError, AttributeError, KeyError):
        # A part of the body of a shape the translation does not know (validation checks
        # the standard fields; nested tool-call and image parts are left to the adapter).
        raise AttemptFailed(
            "unsupported_request",
            "the request has a part of an unexpected shape for this upstream's API",
        ) from None


def _build_request(
    target: Target,
    body: dict[str, Any],
    stream: bool,
    operation: str,
    native: NativeRequest | None,
) -> httpx.Request:
    ep = target.endpoint
    if operation == "embeddings":
        headers, content = openai.build_embeddings_request(body, ep.upstream_model, target.api_key)
        url = f"{target.base_url}/embeddings"
    elif _is_native(target, native):
        assert native is not None
        headers, content = anthropic_native.build_request(
            native, ep.upstream_model, target.api_key, stream=stream
        )
        url = f"{target.base_url}/messages"
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


def _is_native(target: Target, native: NativeRequest | None) -> bool:
    """Whether this attempt sends the client's Messages request as it is (R-API-9)."""
    return native is not None and target.api_style == "anthropic"


def _in_band_failure(
    target: Target, error_type: str, message: str, code: object = None, *, where: str
) -> AttemptFailed:
    """An error object inside a 200 answer, classified exactly as the status it names
    (SPEC D-18): a final 400 is passed through, a 5xx or 429 fails over."""
    status = status_of_in_band_error(error_type, code)
    return AttemptFailed(
        "http_error",
        f"upstream reported an error {where} (as HTTP {status})",
        http_status=status,
        retryable=is_retryable_status(status, None),
        upstream_message=target.safe(message),
    )


def _error_in_body(data: bytes) -> tuple[str, str, object] | None:
    """(type, message, code) when a 200 body is an error object rather than an answer."""
    if b'"error"' not in data:
        return None
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict) or not parsed.get("error"):
        return None
    if any(key in parsed for key in ("choices", "data", "content")):
        return None  # an answer that merely mentions an error field
    error = parsed["error"]
    if not isinstance(error, dict):
        return "api_error", str(error), None
    code = error.get("code", error.get("status"))
    return str(error.get("type") or "api_error"), str(error.get("message") or ""), code


async def call_once(
    client: httpx.AsyncClient,
    target: Target,
    body: dict[str, Any],
    operation: str,
    ids: dict,
    native: NativeRequest | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One non-streaming attempt -> (the answer as a chat completion, the upstream's own
    message when called natively), or AttemptFailed."""
    response = await send_head(client, _build(target, body, False, operation, native), target)
    if response.status_code != 200:
        raise await fail_from_status(response, target)
    data = await read_body(response, target)
    in_band = _error_in_body(data)
    if in_band is not None:
        raise _in_band_failure(target, *in_band, where="in a 200 answer")
    slug = target.endpoint.model
    try:
        if _is_native(target, native):
            return anthropic_native.parse_message(data, model=slug, **ids)
        if operation == "embeddings":
            return openai.parse_embeddings(data, model=slug), None
        if target.api_style == "anthropic":
            return anthropic.parse_response(data, model=slug, **ids), None
        return openai.parse_response(data, model=slug), None
    except (ValueError, KeyError, TypeError):
        # Not JSON, or JSON short of the answer's shape (each adapter's check): D-18.
        raise AttemptFailed("malformed", "upstream sent a malformed response") from None


async def open_stream(
    client: httpx.AsyncClient,
    target: Target,
    body: dict[str, Any],
    ids: dict,
    deadline_at: float,
    native: NativeRequest | None = None,
) -> Opened:
    """Start a streaming attempt and read until its first content frame (the commit check):
    an error, a malformed frame or an early end before that is still a failed attempt.
    However it ends short of that — a failure, the deadline, the client hanging up (a
    cancellation) — the upstream response is closed before this returns or raises."""
    started = time.perf_counter()
    response = await send_head(client, _build(target, body, True, "chat", native), target)
    if response.status_code != 200:
        raise await fail_from_status(response, target)
    ep = target.endpoint
    if _is_native(target, native):
        assert native is not None
        translator: Any = anthropic_native.NativeStream(
            message_id=native.message_id, model=ep.model
        )
    elif target.api_style == "anthropic":
        translator = anthropic.StreamTranslator(model=ep.model, **ids)
    else:
        translator = openai.StreamTranslator(model=ep.model, upstream_model=ep.upstream_model)
    buffered: list[bytes] = []
    chunks = response.aiter_bytes()
    committed = False
    try:
        async with asyncio.timeout(target.ttfb_timeout_s):
            while not translator.emitted_content:
                chunk = await anext(chunks, None)
                if chunk is None:
                    raise AttemptFailed("stream_error", "upstream stream ended before any content")
                buffered.extend(translator.feed(chunk))
                if translator.error:
                    error_type, message = translator.error
                    code = getattr(translator, "error_code", None)
                    raise _in_band_failure(
                        target, error_type, message, code, where="before any content"
                    )
        committed = True
    except TimeoutError:
        raise AttemptFailed("timeout", "no first token in time") from None
    except httpx.HTTPError as exc:
        # The head said 200 and the stream broke before any content (D-18: 502 at the end).
        raise AttemptFailed(
            "stream_error", f"upstream stream broke before any content ({type(exc).__name__})"
        ) from None
    finally:
        if not committed:
            drop_connection(response)
            await close_response(response)
    return Opened(
        target, response, translator, chunks, buffered, started, elapsed_ms(started), deadline_at
    )
