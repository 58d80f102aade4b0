"""`X-Request-Id` on every response, errors included (SPEC D-10)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

from gateway.ids import new_request_id

_SANE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,64}$")


def _request_id(request: HttpRequest) -> str:
    sent = request.headers.get("X-Request-Id", "")
    return sent if _SANE_ID.match(sent) else new_request_id()


@sync_and_async_middleware
def request_id_middleware(get_response: Callable) -> Callable:
    async def middleware(request: HttpRequest) -> HttpResponseBase:
        request.request_id = _request_id(request)  # type: ignore[attr-defined]
        response = await get_response(request)
        response["X-Request-Id"] = request.request_id  # type: ignore[attr-defined]
        return response

    def sync_middleware(request: HttpRequest) -> HttpResponseBase:
        request.request_id = _request_id(request)  # type: ignore[attr-defined]
        response = get_response(request)
        response["X-Request-Id"] = request.request_id  # type: ignore[attr-defined]
        return response

    return middleware if _is_async(get_response) else sync_middleware


def _is_async(func: Callable[..., Awaitable[object]] | Callable) -> bool:
    from asgiref.sync import iscoroutinefunction

    return iscoroutinefunction(func)
