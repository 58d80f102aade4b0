"""One HTTP exchange with an upstream, within the target's timeouts: `send_head` awaits
the response head (connect + first-byte time), `read_body` reads a body (idle timeout) and
closes the response, and `failure_of` / `fail_from_status` say which attempt failure a
non-200 answer is, its body cut at MAX_ERROR_BODY_BYTES and its text scrubbed of the
target's credentials. Redirects are never followed. Used by the executor's attempts
(attempt.py) and the token count (count_tokens.py).
"""

from __future__ import annotations

import asyncio

import httpx

from gateway.upstream.close import close_response
from gateway.upstream.providers import anthropic, openai
from gateway.upstream.target import Target
from routing.engine.attempts import AttemptFailed, is_retryable_status, retry_after_seconds

MAX_ERROR_BODY_BYTES = 64 * 1024


async def send_head(
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


async def fail_from_status(response: httpx.Response, target: Target) -> AttemptFailed:
    """The attempt failure a non-200 answer means, its body read first (at most
    MAX_ERROR_BODY_BYTES, within the idle timeout); the response is closed."""
    try:
        async with asyncio.timeout(target.idle_timeout_s):
            data = await read_at_most(response, MAX_ERROR_BODY_BYTES)
    except (TimeoutError, httpx.HTTPError):
        data = b""
    finally:
        await close_response(response)
    return failure_of(response, data, target)


def failure_of(response: httpx.Response, data: bytes, target: Target) -> AttemptFailed:
    """The attempt failure a non-200 answer (its head and the body read so far) means."""
    status = response.status_code
    if status < 400:
        # Redirects are never followed (an endpoint's URL comes from the catalog only);
        # it is the endpoint's fault, so the next one may serve (D-18: 502 at the end).
        message = f"upstream answered HTTP {status} (redirects are never followed)"
        return AttemptFailed("redirect", message, http_status=status)
    module = anthropic if target.api_style == "anthropic" else openai
    _kind, message = module.parse_error(status, data)
    return AttemptFailed(
        "http_error",
        f"upstream answered HTTP {status}",
        http_status=status,
        retryable=is_retryable_status(status, response.headers.get("x-should-retry")),
        retry_after=retry_after_seconds(response.headers.get("retry-after")),
        upstream_message=target.safe(message),
    )


async def read_body(response: httpx.Response, target: Target, limit: int | None = None) -> bytes:
    """A 200 answer's body, within the idle timeout (and cut at `limit` bytes, if given);
    the response is closed however it ends."""
    try:
        async with asyncio.timeout(target.idle_timeout_s):
            return await (response.aread() if limit is None else read_at_most(response, limit))
    except TimeoutError:
        raise AttemptFailed("timeout", "upstream body did not arrive in time") from None
    except httpx.HTTPError as exc:
        # The head said 200 and the body broke off: a malformed answer (D-18), not an
        # endpoint out of reach.
        raise AttemptFailed(
            "malformed", f"upstream body was cut short ({type(exc).__name__})"
        ) from None
    finally:
        await close_response(response)


async def read_at_most(response: httpx.Response, limit: int) -> bytes:
    """An error body, cut at `limit` bytes: a hostile upstream may send gigabytes."""
    data = b""
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= limit:
            break
    return data[:limit]
