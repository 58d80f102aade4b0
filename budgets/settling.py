"""Settlements under way: each request's is a task of its own (the record step cannot
wait on a store), kept here so shutdown can wait for them before the ledger's last write."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

_pending: set[asyncio.Task[None]] = set()


def start(settlement: Coroutine[Any, Any, None]) -> None:
    task = asyncio.get_running_loop().create_task(settlement)
    _pending.add(task)
    task.add_done_callback(_pending.discard)


async def drain() -> None:
    if _pending:
        await asyncio.gather(*_pending, return_exceptions=True)
