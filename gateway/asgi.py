"""ASGI entry point.

Two Django handlers share one URLconf. The API paths (`/v1/`, the probes, `/metrics`) go
to a handler whose middleware is only the request-id middleware: Django's built-in
middleware (sessions, auth, CSRF, messages, security headers) is `MiddlewareMixin`-based,
and under ASGI each of its hooks runs in a thread via `sync_to_async` — fourteen thread
hops per request, most of the gateway's CPU per call in the profile
(docs/performance.md). The console and everything else get the full stack.

The wrapper also answers the lifespan protocol: at start-up the state shared between
replicas is loaded from Redis when configured (gateway/state/shared_state.py); on shutdown the
queued traces are flushed, the sharing stops and the upstream client is closed. Without a
Celery broker it also runs the periodic tasks (rollout guard, retention purge) on the
worker's in-process scheduler (gateway/scheduler.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

import django  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.exceptions import RequestAborted  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.http import HttpResponseBase  # noqa: E402
from django.urls import set_script_prefix  # noqa: E402

from gateway import drain  # noqa: E402

django.setup(set_prefix=False)

# The garbage collector, tuned for a server holding thousands of requests at once
# (docs/performance.md, "Streams waiting for a first token"). With Python's default
# thresholds (700, 10, 10) a worker holding 5,000 streams (~690k tracked objects) runs full
# collections of 0.5-1.5 s while clients come and go: releasing 5,000 hung-up streams took
# 2.2-3.2 s, with these 0.9 s. Objects made at start-up (modules, settings, URL map) are
# frozen out of every collection; young collections run every 50k allocations, not 700.
GC_THRESHOLDS = (50_000, 20, 20)
gc.freeze()
gc.set_threshold(*GC_THRESHOLDS)

API_PREFIXES = ("/v1/", "/healthz", "/livez", "/readyz", "/health", "/metrics")
API_MIDDLEWARE = ["gateway.middleware.request_id_middleware"]


class ApiASGIHandler(ASGIHandler):
    """Django's ASGI handler with the API's own, all-async middleware list, and without
    the request_started/request_finished signals: their receivers reset and close
    database connections, each in a thread hop, and the API path holds no connection on
    the event loop's thread (its few queries run in `sync_to_async` threads)."""

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Django's ASGIHandler.handle (5.2) minus the two signals; the disconnect handling
        # is kept as it is, so a client that goes away cancels the view or the stream.
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            return

        async def process_request() -> HttpResponseBase:
            response = await self.run_get_response(request)
            try:
                with contextlib.suppress(asyncio.CancelledError):
                    await self.send_response(response, send)
            finally:
                # A stream whose client left before the server iterated it has an upstream
                # call open that only this can close (gateway/api/wire.py StreamFrames).
                # (A no-op without a task once the relay ran: the common case.)
                abandon = getattr(response, "switchyard_abandon", None)
                if abandon is not None:
                    await abandon()
            return response

        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request()),
        ]
        drain.current.track(tasks[1])  # cancelled, as a disconnect would, at the drain deadline
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                with contextlib.suppress(RequestAborted, asyncio.CancelledError):
                    task.result()
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        body_file.close()

    def load_middleware(self, is_async: bool = False) -> None:
        # load_middleware reads settings.MIDDLEWARE; swap it for this handler only, once,
        # at start-up (before any request is served).
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = API_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


api_application = ApiASGIHandler()
django_application = ASGIHandler()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["path"].startswith(API_PREFIXES):
        await api_application(scope, receive, send)
    else:
        await django_application(scope, receive, send)


async def _lifespan(receive: Any, send: Any) -> None:
    from gateway import scheduler
    from gateway.state import admission_state, request_state
    from gateway.upstream.client import close_client

    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await request_state.start()
            scheduler.start()
            watch = asyncio.create_task(drain.current.watch())
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            watch.cancel()
            await scheduler.stop()
            await admission_state.stop()
            await request_state.stop()
            await close_client()
            await send({"type": "lifespan.shutdown.complete"})
            return
