"""What every response leaves with: `X-Request-Id` (SPEC D-10), and the OpenAI error
envelope instead of a page Django rendered itself (SPEC R-API-3).

Django answers some requests before or around our views: an unknown path (404 from the
URL resolver), a wrong method (the empty 405 of `require_POST`/`require_GET`), an
uncaught exception (the 500 page), the debug pages when DEBUG is on. Those bodies are
HTML. This middleware is first in both middleware stacks (gateway/asgi.py), so it sees
every final response and re-renders such an error as `{"error": {...}}` with the same
status and headers. The console (`/console/`) and the admin (`/admin/`) keep their HTML pages.
Under `/v1/messages` the envelope is Anthropic's (`{"type": "error", "error": {...}}`), as
the Messages views answer their own errors (SPEC R-API-9): an Anthropic client reads one
shape from every answer of that path, a wrong method or a crash included.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from gateway.errors import ApiError, render_anthropic_error, render_error
from gateway.ids import new_request_id

_SANE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,64}$")
# Pages for people, not API clients: their errors stay Django's HTML.
CONSOLE_PREFIXES = ("/admin/", "/console/")
ANTHROPIC_PREFIX = "/v1/messages"  # POST /v1/messages, /v1/messages/count_tokens
_SHOWN_PATH_CHARS = 200  # an echoed path is cut here: error bodies stay small
_NOT_COPIED = frozenset({"content-type", "content-length"})


def _request_id(request: HttpRequest) -> str:
    sent = request.headers.get("X-Request-Id", "")
    return sent if _SANE_ID.match(sent) else new_request_id()


@sync_and_async_middleware
def request_id_middleware(get_response: Callable) -> Callable:
    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponseBase:
            request.request_id = _request_id(request)  # type: ignore[attr-defined]
            return _finish(request, await get_response(request))

        return middleware

    def sync_middleware(request: HttpRequest) -> HttpResponseBase:
        request.request_id = _request_id(request)  # type: ignore[attr-defined]
        return _finish(request, get_response(request))

    return sync_middleware


def _finish(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if response.status_code >= 400 and not _is_json(response) and not _is_console(request):
        response = _as_envelope(request, response)
    response["X-Request-Id"] = request.request_id  # type: ignore[attr-defined]
    return response


def _is_json(response: HttpResponseBase) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


def _is_console(request: HttpRequest) -> bool:
    return request.path.startswith(CONSOLE_PREFIXES)


def _as_envelope(request: HttpRequest, page: HttpResponseBase) -> HttpResponseBase:
    """The error Django rendered as a page, as the API's envelope: same status, same
    headers (`Allow` on a 405 included) and cookies. `render_error` adds
    `x-should-retry: false` where a retry cannot help (404, 405)."""
    anthropic = request.path.startswith(ANTHROPIC_PREFIX)
    response = (render_anthropic_error if anthropic else render_error)(_django_error(request, page))
    for name, value in page.items():
        if name.lower() not in _NOT_COPIED:
            response[name] = value
    response.cookies = page.cookies
    return response


def _django_error(request: HttpRequest, page: HttpResponseBase) -> ApiError:
    """The `ApiError` for an error response Django produced without one of our views."""
    status = page.status_code
    path = request.path[:_SHOWN_PATH_CHARS]
    if status == 404:
        described = "/api/v1/schema/" if path.startswith("/api/") else "/v1/openapi.json"
        return ApiError(
            404,
            f"Unknown path {path}. The API is described at GET {described}.",
            code="unknown_path",
        )
    if status == 405:
        allowed = page.get("Allow", "")
        return ApiError(
            405,
            f"Method {request.method} is not allowed on {path}; allowed: {allowed}.",
            code="method_not_allowed",
        )
    if status >= 500:
        return ApiError(
            status,
            "Internal error; quote the X-Request-Id header when you report it.",
            code="internal_error",
        )
    code = re.sub(r"[^a-z0-9]+", "_", page.reason_phrase.lower()).strip("_")
    return ApiError(status, f"{page.reason_phrase}.", code=code or "http_error")
