"""Waiting for a condition, never for a fixed time: the suite's only sleeps are here.

`wait_for` polls a function until it returns something truthy and returns that value;
past the deadline it fails with what was awaited and the last value seen. `until` is the
same inside an event loop. A test that needs the loop to run the tasks it just created
awaits the state those tasks reach (`until(lambda: db.waiting == 3, ...)`), not a turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 10.0


def wait_for(
    condition: Callable[[], T],
    what: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.02,
) -> T:
    """Poll `condition` until it returns a truthy value; return that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s} s for {what}; last seen: {value!r}")
        time.sleep(interval_s)


async def until(
    condition: Callable[[], T | Awaitable[T]],
    what: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.001,
) -> T:
    """`wait_for` inside an event loop: the loop runs other tasks between the polls.
    `condition` may be a coroutine function."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s} s for {what}; last seen: {value!r}")
        await asyncio.sleep(interval_s)
