"""The console's Content-Security-Policy: scripts and styles from this origin only — no
inline script, no `eval`, nothing from elsewhere — and no framing. A name or a metadata
value an attacker chose is escaped by the templates; this is the second wall if one ever
is not. Only console pages get it (the API answers JSON; the Django admin keeps its own)."""

from __future__ import annotations

from collections.abc import Callable

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
PREFIX = "/console/"


@sync_and_async_middleware
def csp_middleware(get_response: Callable) -> Callable:  # type: ignore[type-arg]
    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponseBase:
            return _finish(request, await get_response(request))

        return middleware

    def sync_middleware(request: HttpRequest) -> HttpResponseBase:
        return _finish(request, get_response(request))

    return sync_middleware


def _finish(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if request.path.startswith(PREFIX):
        response["Content-Security-Policy"] = POLICY
        response["Referrer-Policy"] = "same-origin"
    return response
