"""Redis key prefixes for this folder's tests: each test gets its own through
`redis_prefix()`, and what it wrote under them is deleted after it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

_made: list[str] = []


def redis_prefix() -> str:
    prefix = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    _made.append(prefix)
    return prefix


@pytest.fixture(autouse=True)
def _forget_redis_keys() -> Iterator[None]:
    yield
    if _made and os.environ.get("REDIS_URL"):
        import redis

        client = redis.Redis.from_url(os.environ["REDIS_URL"])
        for prefix in _made:
            keys = list(client.scan_iter(match=f"{prefix}:*"))
            if keys:
                client.delete(*keys)
        client.close()
    _made.clear()
