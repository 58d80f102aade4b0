"""Session pins of smart tier routing (SPEC R-TIER-3): once a conversation of a tiered alias
is classified hard it stays hard while it is active, so a follow-up such as "thanks!" cannot
drop it to the cheap tier (and throw away its provider's prompt cache). Pins only go up:
the store holds hard pins and nothing else, so absence means easy. A pin expires after
`session_ttl_s` without a request; every request of the session slides it.

`TierPinStore` is the seam: `InProcessTierPins` is per process (replicas do not share pins,
as GM's scoring state), and a Redis-backed store can implement the same three methods later.
No I/O and no clock: the caller passes `now` (seconds, its own monotonic or wall clock).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

HARD = "hard"
# Bound on live pins per process; at about 200 bytes a key this is ~20 MB at most. The
# least recently used pin is dropped first: it belongs to the session idle the longest.
DEFAULT_MAX_ENTRIES = 100_000


def pin_key(alias: str, session_key: str) -> str:
    """Pins are per routed alias and detected session (the session key is already scoped
    to its workspace and API key, routing/sessions.py)."""
    return f"{alias}|{session_key}"


class TierPinStore(Protocol):
    def get(self, key: str, now: float) -> str | None:
        """The pinned tier ("hard") while the pin is live, else None. Does not slide it."""
        ...

    def pin_hard(self, key: str, now: float, ttl_s: float) -> None:
        """Pin the key hard until `now + ttl_s` (creating it or sliding it)."""
        ...

    def touch(self, key: str, now: float, ttl_s: float) -> None:
        """Slide a live pin to `now + ttl_s`; an absent or expired key stays absent."""
        ...


class InProcessTierPins:
    """Hard pins in a bounded LRU map of key -> expiry. Expired entries are purged lazily:
    on a read of that key, and from the least recently used end on every write."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._expires_at: OrderedDict[str, float] = OrderedDict()
        # Each method is a few dict operations; the lock keeps them whole if a sync view
        # thread and the event loop ever share the store.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._expires_at)

    def get(self, key: str, now: float) -> str | None:
        with self._lock:
            expires_at = self._expires_at.get(key)
            if expires_at is None:
                return None
            if now >= expires_at:
                del self._expires_at[key]
                return None
            return HARD

    def pin_hard(self, key: str, now: float, ttl_s: float) -> None:
        with self._lock:
            self._expires_at[key] = now + ttl_s
            self._expires_at.move_to_end(key)
            self._purge(now)

    def touch(self, key: str, now: float, ttl_s: float) -> None:
        with self._lock:
            expires_at = self._expires_at.get(key)
            if expires_at is None:
                return
            if now >= expires_at:
                del self._expires_at[key]
                return
            self._expires_at[key] = now + ttl_s
            self._expires_at.move_to_end(key)
            self._purge(now)

    def _purge(self, now: float) -> None:
        """Drop expired pins from the least recently used end, then the oldest over the bound."""
        while self._expires_at:
            oldest, expires_at = next(iter(self._expires_at.items()))
            if now < expires_at:
                break
            del self._expires_at[oldest]
        while len(self._expires_at) > self.max_entries:
            self._expires_at.popitem(last=False)
