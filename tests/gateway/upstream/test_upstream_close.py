"""A closed upstream response is freed as soon as the gateway lets go of it
(gateway/upstream/close.py `close_response`): httpx ties a response and its stream to
each other, and left so every request's response waited for the garbage collector, whose
young collections then took 70–100 ms in a busy worker."""

from __future__ import annotations

import asyncio
import gc
import weakref

import httpx

from gateway.upstream.close import close_response


def test_a_closed_response_is_freed_without_the_garbage_collector() -> None:
    async def run() -> weakref.ref[httpx.Response]:
        transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"ok"))
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.send(client.build_request("GET", "http://up/"), stream=True)
            assert await response.aread() == b"ok"
            await close_response(response)
            return weakref.ref(response)

    gc.collect()
    gc.disable()
    try:
        freed = asyncio.run(run())
        assert freed() is None  # by reference counting alone
    finally:
        gc.enable()
