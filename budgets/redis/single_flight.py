"""Concurrent requests that need the same counters rebuilt share one rebuild.

Every request of a burst at the start of a period finds its counters missing at once;
each rebuilding on its own cost a ledger query on the one database thread (and, for
Redis, two more calls) apiece. Under a 200-request burst on a loaded machine that queue
outlasted the wait for a pooled Redis connection and turned 402s into 503s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence


class SingleFlight:
    """For one event loop (the gateway's): its futures belong to the loop that made them."""

    def __init__(self, rebuild: Callable[[list[str]], Awaitable[None]]) -> None:
        self._rebuild = rebuild
        self._running: dict[str, asyncio.Future[None]] = {}  # name -> the rebuild doing it

    async def run(self, names: Sequence[str]) -> None:
        """Rebuild `names`, joining a rebuild already under way for any of them."""
        started = [n for n in dict.fromkeys(names) if n not in self._running]
        if started:
            rebuild = asyncio.ensure_future(self._rebuild(started))
            for name in started:
                self._running[name] = rebuild
            rebuild.add_done_callback(lambda done: self._finished(started, done))
        joined = {id(f): f for f in (self._running.get(n) for n in names) if f is not None}
        # shielded: a waiter that is cancelled (its client left) cancels no one else's wait
        await asyncio.gather(*(asyncio.shield(f) for f in joined.values()))

    def _finished(self, names: Sequence[str], done: asyncio.Future[None]) -> None:
        for name in names:
            if self._running.get(name) is done:
                del self._running[name]
        if not done.cancelled():
            done.exception()  # the waiters have it; no "exception never retrieved"
