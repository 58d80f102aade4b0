"""Upstream attempts: what happened on each call, which failures may be retried, and what
the client is told when every attempt failed.

One table decides retryability (SPEC R-EXE-1): rate limits, server errors, connect
errors, redirects and timeouts before the first byte move on to the next endpoint; the
request's own faults (400, 404, 413, 422) and anything the upstream marks final do not.
One table decides the status after all attempts (SPEC D-18). An in-band error (an error
object in a 200 body, or an error event before any content) counts exactly as the HTTP
status its type names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# 401/403 from an upstream describe that endpoint (a bad managed key, a geo block), not the
# client's request, so another endpoint may well succeed. 404 is the request's (a model id
# the provider does not serve is passed through, D-18) and is not retried; it still cools
# the endpoint (R-EXE-3).
RETRYABLE_STATUSES = frozenset({401, 403, 408, 409, 425, 429, 500, 502, 503, 504, 529})
# Upstream statuses passed through to the client with their own status (SPEC D-18).
PASSED_THROUGH = frozenset({400, 404, 413, 422})
# Every endpoint refusing with one of these means "try again later": 503 with Retry-After.
UNAVAILABLE = frozenset({429, 503, 529})
# Retry-After of our own 503 when no upstream named a usable one, and the longest we relay.
DEFAULT_RETRY_AFTER_S = 1
MAX_RETRY_AFTER_S = 300
# Error `type` values of OpenAI- and Anthropic-style error objects -> the status they mean.
STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "requests": 429,  # OpenAI's type for request-rate 429s
    "tokens": 429,
    "overloaded_error": 529,
    "api_error": 500,
    "server_error": 500,
}


def refuses_credential(failure_kind: str, http_status: int | None) -> bool:
    """Whether a failed attempt made with a workspace's own key says the key is bad: the
    upstream answered an HTTP error, or the key does not decrypt. A connect error, a
    timeout or a malformed answer says nothing of the key."""
    return failure_kind == "no_credential" or (http_status or 0) >= 400


@dataclass(slots=True)
class Attempt:
    """One upstream call, as listed in `X-Switchyard-Attempts` (SPEC R-API-4)."""

    provider: str
    model: str
    endpoint: str
    status: str  # ok | error
    http_status: int | None
    latency_ms: int
    error: str | None = None
    retry_after_s: float | None = None  # the upstream's Retry-After, for cooldowns
    # It carried the workspace's own provider key (BYOK): also counted in that credential's
    # live series (gateway/request_path/record.py). Not on the wire: the key is the
    # workspace's business, and `attempts` keeps its shape.
    own_credential: bool = False
    failure_kind: str = ""  # AttemptFailed.kind of a failed attempt (`no_credential`, …)

    @property
    def blames_credential(self) -> bool:
        """A failure of the workspace's own key — the upstream refused it (any HTTP error),
        or it does not decrypt — is that credential's, not the endpoint's that every tenant
        shares (SPEC R-BEY-7): the cooldowns (gateway/state/request_state.AttemptObserver)
        and the live series decide alike. No answer at all speaks of the endpoint."""
        if not self.own_credential or self.status == "ok":
            return False
        return refuses_credential(self.failure_kind, self.http_status)

    def as_dict(self) -> dict[str, object]:
        return {
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "status": self.status,
            "http_status": self.http_status,
            "latency_ms": self.latency_ms,
            "error": self.error,
        }


class AttemptFailed(Exception):
    """An attempt that produced no usable response."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        http_status: int | None = None,
        retryable: bool = True,
        retry_after: float | None = None,
        upstream_message: str = "",
    ) -> None:
        super().__init__(message)
        # connect_error | timeout | http_error | redirect | malformed | stream_error |
        # unsupported_request | no_credential
        self.kind = kind
        self.message = message  # the gateway's own words: safe to store, log and show
        self.http_status = http_status
        self.retryable = retryable
        self.retry_after = retry_after  # seconds, parsed from the upstream's Retry-After
        # What the upstream said, already scrubbed of the attempt's credentials (D-17):
        # for the client's error body only, never stored.
        self.upstream_message = upstream_message


def is_retryable_status(status: int, should_retry_header: str | None) -> bool:
    if should_retry_header is not None and should_retry_header.lower() == "false":
        return False  # the upstream says the error is final
    return status in RETRYABLE_STATUSES or status >= 500


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` in seconds, or None for anything that is not a sane number (the
    HTTP-date form is rare from LLM APIs and ignored; the text is the upstream's)."""
    if not value or len(value) > 16:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER_S)


def status_of_in_band_error(error_type: str, code: object = None) -> int:
    """The HTTP status an in-band error object stands for: a numeric `code`/`status` when
    the upstream gave one, else its `type`; an unknown type is a server error."""
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    if isinstance(code, str) and code.isdigit() and 400 <= int(code) <= 599:
        return int(code)
    if code == "context_length_exceeded":
        return 400
    return STATUS_OF_ERROR_TYPE.get(error_type, 500)


@dataclass(frozen=True, slots=True)
class FinalError:
    """What the client is told after the last attempt failed (SPEC D-18)."""

    status: int
    code: str
    retry_after_s: int | None = None


def final_error(failures: list[AttemptFailed]) -> FinalError:
    """The status and code for a request whose every attempt failed. `failures` is in
    attempt order and not empty."""
    last = failures[-1]
    if all(f.kind == "unsupported_request" for f in failures):
        return FinalError(400, "unsupported_request")  # no endpoint's API can express it
    if not last.retryable and last.http_status in PASSED_THROUGH:
        return FinalError(last.http_status, "upstream_rejected_request")
    if last.kind == "timeout":
        return FinalError(504, "upstream_timeout")
    tried = [f for f in failures if f.kind not in ("unsupported_request", "no_credential")]
    if tried and all(f.http_status in UNAVAILABLE or f.kind == "connect_error" for f in tried):
        hints = [f.retry_after for f in tried if f.retry_after is not None]
        wait = math.ceil(min(hints)) if hints else DEFAULT_RETRY_AFTER_S
        return FinalError(503, "upstream_unavailable", max(wait, DEFAULT_RETRY_AFTER_S))
    if not tried:
        return FinalError(503, "upstream_unavailable", DEFAULT_RETRY_AFTER_S)
    return FinalError(502, "upstream_error")
