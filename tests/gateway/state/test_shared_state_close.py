"""The shared state's reader ends with its event loop even when redis-py never finishes
closing the pub/sub connection (redis/redis-py#3941: its close can wait for the socket
forever). Unbounded, `asyncio.run` waited for the cancelled reader for good: a worker's
shutdown, or a test's event loop, never ended. Needs REDIS_URL."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid

import pytest
import redis.asyncio.client

from gateway.state.shared_state import SharedState

pytestmark = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")


def test_the_event_loop_ends_while_the_subscription_never_finishes_closing(monkeypatch):
    # given redis-py's pub/sub close never returns
    async def never(self: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(redis.asyncio.client.PubSub, "aclose", never)
    shared = SharedState(os.environ["REDIS_URL"], f"switchyard-test-{uuid.uuid4().hex[:8]}")

    async def subscribed_then_done() -> None:
        await shared.start(wait_s=5)  # the reader has subscribed and loaded

    # when the event loop the reader runs in ends (asyncio.run cancels its tasks)
    ran = threading.Thread(target=asyncio.run, args=(subscribed_then_done(),), daemon=True)
    ran.start()
    ran.join(timeout=10)
    # then it ended: the close was given up on, not waited for
    assert not ran.is_alive()
