"""Upstream attempts: what happened on each call, and which failures may be retried.

One table decides retryability (SPEC R-EXE-1): rate limits, server errors, connect
errors and timeouts before the first byte move on to the next endpoint; client errors
(400, 413, 422 and other 4xx) and anything the upstream marks final do not.
"""

from __future__ import annotations

from dataclasses import dataclass

# 401/403/404 from an upstream describe that endpoint (a bad managed key, a model the
# provider dropped), not the client's request, so another endpoint may well succeed.
RETRYABLE_STATUSES = frozenset({401, 403, 404, 408, 409, 425, 429, 500, 502, 503, 504, 529})


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
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind  # connect_error | timeout | http_error | malformed | stream_error
        self.message = message
        self.http_status = http_status
        self.retryable = retryable
        self.retry_after = retry_after


def is_retryable_status(status: int, should_retry_header: str | None) -> bool:
    if should_retry_header is not None and should_retry_header.lower() == "false":
        return False  # the upstream says the error is final
    return status in RETRYABLE_STATUSES or status >= 500


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` in seconds (the HTTP-date form is rare from LLM APIs and ignored)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
