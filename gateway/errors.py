"""OpenAI-shaped errors: `{"error": {"message", "type", "code", "param"}}` (SPEC R-API-3),
and the same errors in Anthropic's envelope for its Messages API (`render_anthropic_error`,
R-API-9).

Every error a user can cause is raised as `ApiError` and rendered here; nothing renders
an HTML page or a stack trace on the /v1 path.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from django.http import HttpResponse

log = logging.getLogger(__name__)

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "routing_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    502: "upstream_error",
    503: "upstream_error",
    504: "upstream_error",
}

# Anthropic's error types by status (its errors page, and the SDK's ErrorObject union).
# 409 is Switchyard's "no endpoint satisfies the policy": invalid_request_error, which
# Anthropic uses for unlisted 4xx, since conflict_error promises a concurrent change that
# a retry resolves. 502 (an upstream answered badly or broke) is api_error, Anthropic's
# own server failure; 503 (every endpoint over capacity, with Retry-After) is
# overloaded_error, which clients back off and retry; 504 is the SDK's timeout_error.
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",  # a budget exhausted (Switchyard's insufficient_quota)
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}

# Errors that a retry of the same request cannot change: the official SDKs honour
# `x-should-retry: false` and stop retrying them (they retry a 409 three times otherwise).
FINAL_STATUSES = frozenset({400, 401, 403, 404, 405, 409, 413, 422})


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.error_type = error_type or ERROR_TYPES.get(status, "invalid_request_error")
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        error = {
            "message": self.message,
            "type": self.error_type,
            "code": self.code,
            "param": self.param,
        }
        error.update(self.extra)
        return {"error": error}


def invalid(message: str, param: str | None = None, code: str = "invalid_request") -> ApiError:
    return ApiError(400, message, code=code, param=param)


def render_error(error: ApiError) -> HttpResponse:
    response = HttpResponse(
        orjson.dumps(error.body()), status=error.status, content_type="application/json"
    )
    if error.status in FINAL_STATUSES:
        response["x-should-retry"] = "false"
    for name, value in error.headers.items():
        response[name] = value
    return response


def anthropic_error_body(
    status: int, message: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Anthropic's error envelope for a response of `status`. `extra` members (a 409's
    `excluded` endpoints, a failover's `attempts`) join the error object, which Anthropic's
    SDK reads for `type` and `message` only and keeps whole as the exception's body."""
    fallback = "invalid_request_error" if 400 <= status < 500 else "api_error"
    kind = ANTHROPIC_ERROR_TYPES.get(status, fallback)
    return {"type": "error", "error": {**(extra or {}), "type": kind, "message": message}}


def render_anthropic_error(error: ApiError) -> HttpResponse:
    """The error in Anthropic's envelope (`{"type": "error", "error": {type, message, …}}`)
    with the same extra members, status, `Retry-After` and `x-should-retry` as the
    OpenAI-shaped one (R-BEY-6: the excluded endpoints and their reasons)."""
    response = HttpResponse(
        orjson.dumps(anthropic_error_body(error.status, error.message, error.extra)),
        status=error.status,
        content_type="application/json",
    )
    if error.status in FINAL_STATUSES:
        response["x-should-retry"] = "false"
    for name, value in error.headers.items():
        response[name] = value
    return response


def drf_exception_handler(exc: Exception, context: dict[str, Any]) -> HttpResponse | None:
    """DRF views (non-hot-path APIs) render the same envelope."""
    from rest_framework import exceptions

    if isinstance(exc, ApiError):
        return render_error(exc)
    if isinstance(exc, exceptions.APIException):
        status = exc.status_code
        detail = exc.detail if isinstance(exc.detail, str) else orjson.dumps(exc.detail).decode()
        param = getattr(exc, "param", None)  # set by management_api.base.ApiProblem
        return render_error(ApiError(status, str(detail), code=exc.default_code, param=param))
    log.exception("unhandled error in API view")
    return render_error(ApiError(500, "internal error", code="internal_error"))
