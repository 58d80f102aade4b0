"""The trace writer under traffic (SPEC R-OBS-1): a trace queued while a batch is being
written is written without more traffic coming, and a busy live gateway holds one database
connection per worker, not one per request thread (counted on PostgreSQL)."""

from __future__ import annotations

import asyncio

import pytest

from audit.record import TraceWriter
from tests.waiting import until

pytestmark = pytest.mark.live


def test_a_trace_queued_while_a_batch_is_written_is_written_without_more_traffic():
    # given a writer whose insert is slow, and a trace queued while the first batch is
    # being written (the last request of a burst)
    writing: list[list[str]] = []
    written: list[list[str]] = []
    inserted = asyncio.Event()  # a batch's insert ends once the test has set it

    def slow_insert(func):
        async def run(batch):
            writing.append([fields["id"] for fields in batch])
            await inserted.wait()
            written.append([fields["id"] for fields in batch])

        return run

    writer = TraceWriter(flush_s=0.01, run_sync=slow_insert)

    async def burst() -> None:
        writer.record({"id": "first"})
        await until(lambda: writing, "the first flush writing")
        writer.record({"id": "last"})
        inserted.set()
        # and then nothing arrives
        await until(lambda: not writer.pending(), "every trace queued written")

    # when
    asyncio.run(burst())
    # then the last trace was written too, in a second batch
    assert written == [["first"], ["last"]]
    assert writer.pending() == []


def test_a_busy_gateway_holds_one_database_connection_per_worker(fresh_live):
    # given PostgreSQL, where every connection counts against max_connections
    database_url = fresh_live.env["DATABASE_URL"]
    if not database_url.startswith("postgres"):
        pytest.skip("connections are counted on PostgreSQL")
    import httpx
    import psycopg

    headers = {"Authorization": f"Bearer {fresh_live.keys['acme']}"}
    body = {"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]}
    # when many requests each write a trace and read one back (snapshot polls run meanwhile)
    for _ in range(40):
        reply = httpx.post(f"{fresh_live.base_url}/chat/completions", json=body, headers=headers)
        httpx.get(f"{fresh_live.base_url}/traces/{reply.headers['x-switchyard-trace-id']}",
                  headers=headers)  # fmt: skip
    # then the gateway's worker still holds one connection (before: one per request thread)
    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(database_url) as conn:
        count = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()[0]
    assert count <= 2, count  # the worker's one, and at most one closing
