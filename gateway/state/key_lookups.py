"""Asking the database about an API key the snapshot does not know (SPEC R-KEY-1, D-3).

A key made since the worker's last snapshot poll is in the database but not in the
snapshot; without asking, it would be refused until the next poll, on every worker that
has not polled yet. Asking on every miss would turn a flood of random keys into a query
per request. So `KeyLookups` asks at most:

- once at a time per key id: concurrent misses on one id share the one lookup;
- not again for an id the database did not know, for `unknown_ttl_s`: a key id is random
  and a revoked key is never revived, so "unknown" cannot turn out wrong for a client that
  holds a real key; the memory is short and bounded so that it costs little;
- `lookups_per_s` times a second per worker (a token bucket of `burst`): past that a miss
  is answered "not known" without asking, as it was before lookups existed, and the next
  snapshot poll decides.

What a lookup does when it finds the key — reload the snapshot — is the `find` it is
given (gateway/state/snapshot.py); this module holds only the bookkeeping, on the event
loop, with the clock it is given.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

# An id the database did not have is not asked about again for this long.
UNKNOWN_TTL_S = 10.0
# Ids remembered as unknown; past this the oldest are forgotten (about 100 bytes each).
MAX_UNKNOWN = 10_000
# Lookups one worker starts per second, and how many it may start at once: new keys come
# by ones and twos, while a flood of random keys must stay a handful of indexed reads.
LOOKUPS_PER_S = 20.0
LOOKUP_BURST = 20.0


class KeyLookups:
    """Single-flight, remembered and rationed calls of `find(lookup_id)`, which says whether
    the key now exists (and raises when it cannot tell). Per worker, in its event loop."""

    def __init__(
        self,
        find: Callable[[str], Awaitable[bool]],
        *,
        clock: Callable[[], float],
        unknown_ttl_s: float = UNKNOWN_TTL_S,
        max_unknown: int = MAX_UNKNOWN,
        lookups_per_s: float = LOOKUPS_PER_S,
        burst: float = LOOKUP_BURST,
    ) -> None:
        self._find = find
        self._clock = clock
        self._unknown_ttl_s = unknown_ttl_s
        self._max_unknown = max_unknown
        self._per_s = lookups_per_s
        self._burst = burst
        self._tokens = burst
        self._filled_at = clock()
        self._in_flight: dict[str, asyncio.Future[bool]] = {}
        self._unknown: OrderedDict[str, float] = OrderedDict()  # id -> when it is forgotten

    async def exists(self, lookup_id: str) -> bool:
        """Whether the key exists: the lookup in flight for this id, else False for an id
        remembered as unknown or when the budget is spent, else a new lookup."""
        pending = self._in_flight.get(lookup_id)
        if pending is None:
            now = self._clock()
            if self._remembered_unknown(lookup_id, now) or not self._take_token(now):
                return False
            pending = asyncio.ensure_future(self._find(lookup_id))
            self._in_flight[lookup_id] = pending
            pending.add_done_callback(lambda done: self._settled(lookup_id, done))
        # Shielded: a waiter whose client hung up must not cancel the others' lookup.
        return await asyncio.shield(pending)

    def remembered_unknown(self) -> int:
        return len(self._unknown)

    def _settled(self, lookup_id: str, done: asyncio.Future[bool]) -> None:
        del self._in_flight[lookup_id]
        if done.cancelled() or done.exception() is not None or done.result():
            return  # a failure is not an answer; a found key is in the snapshot now
        self._unknown[lookup_id] = self._clock() + self._unknown_ttl_s
        while len(self._unknown) > self._max_unknown:
            self._unknown.popitem(last=False)

    def _remembered_unknown(self, lookup_id: str, now: float) -> bool:
        forgotten_at = self._unknown.get(lookup_id)
        if forgotten_at is None:
            return False
        if forgotten_at > now:
            return True
        del self._unknown[lookup_id]
        return False

    def _take_token(self, now: float) -> bool:
        elapsed = max(0.0, now - self._filled_at)
        self._tokens = min(self._burst, self._tokens + elapsed * self._per_s)
        self._filled_at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True
