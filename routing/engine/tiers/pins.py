"""Session pins of smart tier routing (SPEC R-TIER-3): once a conversation of a tiered alias
is classified hard it stays hard while it is active, so a follow-up such as "thanks!" cannot
drop it to the cheap tier (and throw away its provider's prompt cache). Pins only go up:
the store holds hard pins and nothing else, so absence means easy. A pin expires after
`session_ttl_s` without a request; every request of the session slides it.

`TierPinStore` is the seam the classifier writes through. `InProcessTierPins` keeps the pins
of this process; with several replicas its `listener` hears each new pin (and a slid one
every `REPUBLISH_AFTER_S`) and `apply_remote` takes pins other replicas set (R-BEY-9,
gateway/state/shared_state.py), so reads stay local dict lookups.
No I/O and no clock: the caller passes `now` (wall clock, epoch seconds, since pins are
shared with their absolute expiry).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

HARD = "hard"
# Bound on live pins per process; at about 200 bytes a key this is ~20 MB at most. The
# least recently used pin is dropped first: it belongs to the session idle the longest.
DEFAULT_MAX_ENTRIES = 100_000
# A pin that only slid is told again once the expiry other replicas hold is off by more
# than this (a sliding TTL would otherwise mean one Redis write per request); another
# replica may so forget an idle pin up to this much earlier than the node that slid it.
REPUBLISH_AFTER_S = 60.0

# Told when a key is pinned hard (new or revived at once, slid pins now and then): (key,
# expires_at).
TierPinListener = Callable[[str, float], None]


def pin_key(alias: str, session_key: str) -> str:
    """Pins are per routed alias and detected session (the session key is already scoped
    to its workspace and API key, routing/engine/affinity/sessions.py)."""
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
    on a read of that key, and from the least recently used end on every write. Each entry
    also keeps the expiry last told to `listener`, what other replicas hold."""

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, republish_after_s: float = REPUBLISH_AFTER_S
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self.republish_after_s = republish_after_s
        self.listener: TierPinListener | None = None
        # key -> (expires_at, expires_at as last told to the listener)
        self._pins: OrderedDict[str, tuple[float, float]] = OrderedDict()
        # Each method is a few dict operations; the lock keeps them whole if a sync view
        # thread and the event loop ever share the store.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pins)

    def get(self, key: str, now: float) -> str | None:
        with self._lock:
            entry = self._pins.get(key)
            if entry is None:
                return None
            if now >= entry[0]:
                del self._pins[key]
                return None
            return HARD

    def pin_hard(self, key: str, now: float, ttl_s: float) -> None:
        with self._lock:
            tell = self._slide(key, now, now + ttl_s, create=True)
        if tell and self.listener is not None:
            self.listener(key, now + ttl_s)

    def touch(self, key: str, now: float, ttl_s: float) -> None:
        with self._lock:
            tell = self._slide(key, now, now + ttl_s, create=False)
        if tell and self.listener is not None:
            self.listener(key, now + ttl_s)

    def apply_remote(self, key: str, expires_at: float) -> None:
        """A pin another replica set or slid. Pins only go up, so the later expiry wins;
        the listener is not told."""
        with self._lock:
            entry = self._pins.get(key)
            if entry is not None and entry[0] >= expires_at:
                return
            self._pins[key] = (expires_at, expires_at)
            self._pins.move_to_end(key)
            while len(self._pins) > self.max_entries:
                self._pins.popitem(last=False)

    def _slide(self, key: str, now: float, expires_at: float, *, create: bool) -> bool:
        """Set the key's expiry (an absent or lapsed key only when `create`); True when the
        listener should hear of it: a new or revived pin, or other replicas' copy is stale."""
        entry = self._pins.get(key)
        if entry is not None and now >= entry[0]:
            del self._pins[key]
            entry = None
        if entry is None and not create:
            return False
        tell = entry is None or abs(expires_at - entry[1]) > self.republish_after_s
        told = expires_at if tell or entry is None else entry[1]
        self._pins[key] = (expires_at, told)
        self._pins.move_to_end(key)
        self._purge(now)
        return tell

    def _purge(self, now: float) -> None:
        """Drop expired pins from the least recently used end, then the oldest over the bound."""
        while self._pins:
            oldest, (expires_at, _told) = next(iter(self._pins.items()))
            if now < expires_at:
                break
            del self._pins[oldest]
        while len(self._pins) > self.max_entries:
            self._pins.popitem(last=False)
