"""ASGI entry point. Wraps Django's handler to answer the lifespan protocol: on shutdown
the queued traces are flushed and the upstream client closed."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_application = get_asgi_application()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "lifespan":
        await django_application(scope, receive, send)
        return
    from gateway import runtime
    from gateway.upstream_client import close_client

    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await runtime.traces().flush()
            await close_client()
            await send({"type": "lifespan.shutdown.complete"})
            return
