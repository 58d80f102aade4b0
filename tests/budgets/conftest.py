"""Redis key prefixes for this folder's tests: each test gets its own through
`redis_prefix()`, and what it wrote under them is deleted after it; and `run_sync`, the
stores' way to the database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

_made: list[str] = []
_pool = ThreadPoolExecutor(max_workers=8)  # concurrent transactions, one connection each


def run_sync(func: Any) -> Any:
    """A ledger's or database store's way to the database from a test's event loop."""

    def closing(*args: Any) -> Any:
        try:
            return func(*args)
        finally:  # no connection left open in a pool thread when the test database goes
            connections.close_all()

    return sync_to_async(closing, thread_sensitive=False, executor=_pool)


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
