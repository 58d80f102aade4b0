"""The batched writer behind traces and the ledger (audit/batch_writer.py): rows being
written are still pending to a reader until the write is done — the ledger's totals read
the database and then the pending rows, and a counter rebuilt during a write must hold
that batch's spending (R-LIM-2)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from asgiref.sync import sync_to_async

from audit.batch_writer import BatchWriter


def test_a_batch_being_written_is_still_pending_until_its_write_is_done() -> None:
    started, release = threading.Event(), threading.Event()
    stored: list[int] = []

    def write(rows: list[int]) -> None:
        started.set()
        release.wait(5)
        stored.extend(rows)

    def run_sync(func: Any) -> Any:
        return sync_to_async(func, thread_sensitive=False)

    async def scenario() -> tuple[list[int], list[int], list[int]]:
        writer = BatchWriter(write, what="rows", flush_s=3600, run_sync=run_sync,
                             max_pending=100)  # fmt: skip
        writer.add([1, 2])
        flushing = asyncio.ensure_future(writer.flush())
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
        writer.add([3])
        # while the batch is in the database's hands, not yet stored
        during = writer.pending()
        release.set()
        await flushing
        return during, writer.pending(), list(stored)

    during, after, stored_rows = asyncio.run(scenario())
    # then a reader still finds it, then finds it stored and no longer pending
    assert during == [1, 2, 3]
    assert stored_rows == [1, 2]
    assert after == [3]
