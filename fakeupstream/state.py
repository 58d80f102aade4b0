"""The fake's mutable state for one process: request statistics, the fault script, the
seeded random generator and the prompt-cache memory. `POST /_fake/reset` restores all of
it to how the process started.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter
from typing import Any

import orjson

from fakeupstream.connection import Request
from fakeupstream.faults import FaultScript
from fakeupstream.profiles import CacheMode, FakeSettings

# Headers whose value is a credential: stats show a sha256 of the value, never the value.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})
# The `repeat` cache mode remembers this many distinct first messages, then starts over,
# so a long benchmark cannot grow the process without bound.
MAX_REMEMBERED_PROMPTS = 100_000


class ServerState:
    """Everything a request may read or change besides its own data."""

    def __init__(self, settings: FakeSettings) -> None:
        self.settings = settings
        self.reset()

    def reset(self) -> None:
        self.rng = random.Random(self.settings.seed)
        self.script = FaultScript()
        self.requests = 0
        self.by_path: Counter[str] = Counter()
        self.last_request: Request | None = None
        self._sequence = 0
        self._seen_prompts: set[int] = set()
        self.cache_mode: CacheMode = self.settings.cached_tokens  # POST /_fake/cache changes it
        self.echo = False  # POST /_fake/echo: error answers quote the credential and prompt
        self.in_flight = 0  # /v1 handlers running now (a stream runs until its end)
        self.released = asyncio.Event()  # set by POST /_fake/release: held requests answer
        self.cancelled = 0  # handlers cut short because the client closed the connection
        # The usage each reply reported, by the request's `user` field: what a gateway's
        # ledger must add up to (deploy/rollout.py).
        self.usage_by_user: dict[str, Counter[str]] = {}

    def record(self, request: Request) -> None:
        """Count a /v1 request and keep it as the last one (redacted only when read)."""
        self.requests += 1
        self.by_path[request.path] += 1
        self.last_request = request

    def count_usage(self, user: object, prompt_tokens: int, completion_tokens: int) -> None:
        if isinstance(user, str):
            usage = self.usage_by_user.setdefault(user, Counter())
            usage.update(
                requests=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )

    def next_id(self, prefix: str) -> str:
        """`prefix` plus a per-process counter: unique, and the same from run to run."""
        self._sequence += 1
        return f"{prefix}{self._sequence}"

    def cached_tokens(self, prompt_tokens: int, first_message: Any) -> int:
        """Prompt tokens to report as read from the cache, per the cache mode."""
        mode = self.cache_mode
        if mode is CacheMode.NONE:
            return 0
        if mode is CacheMode.REPEAT and not self._remember(first_message):
            return 0
        return max(prompt_tokens - 1, 0)  # the last token is never a cache hit

    def _remember(self, first_message: Any) -> bool:
        """True when this first message was seen before; remembers it either way."""
        key = hash(orjson.dumps(first_message, option=orjson.OPT_SORT_KEYS))
        if key in self._seen_prompts:
            return True
        if len(self._seen_prompts) >= MAX_REMEMBERED_PROMPTS:
            self._seen_prompts.clear()
        self._seen_prompts.add(key)
        return False

    def stats(self) -> dict[str, Any]:
        """`GET /_fake/stats`: counts and the last request with credentials hashed."""
        last = self.last_request
        return {
            "requests": self.requests,
            "by_path": dict(self.by_path),
            "last_request": None if last is None else _describe(last),
            "faults": self.script.describe(),
            "in_flight": self.in_flight,
            "cancelled": self.cancelled,
            "echo": self.echo,
            "usage_by_user": {user: dict(usage) for user, usage in self.usage_by_user.items()},
        }


def _describe(request: Request) -> dict[str, Any]:
    headers = {
        name: hashlib.sha256(value.encode()).hexdigest() if name in SECRET_HEADERS else value
        for name, value in request.headers.items()
    }
    try:
        body = orjson.loads(request.body) if request.body else None
    except orjson.JSONDecodeError:
        body = request.body.decode("utf-8", "replace")
    return {"method": request.method, "path": request.path, "headers": headers, "body": body}
