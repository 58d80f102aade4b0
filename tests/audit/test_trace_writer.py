"""The trace writer against the real database (PostgreSQL in CI's second run): a trace
holding hostile client strings is stored, and a row the database refuses never holds back
the traces queued with it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from audit.models import RequestTrace
from audit.record import TraceWriter, storable
from gateway.state.db_thread import close_connections, in_db_thread
from tests.waiting import until
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def writer() -> Iterator[TraceWriter]:
    """A writer inserting from the gateway's one database thread, whose connection is
    closed afterwards (PostgreSQL cannot drop the test database while it is open)."""
    yield TraceWriter(flush_s=60, run_sync=in_db_thread)
    close_connections()


def _fields(workspace_id: int, **extra: object) -> dict[str, object]:
    return {"id": uuid.uuid4(), "request_id": "r", "workspace_id": workspace_id,
            "operation": "chat.completions", "requested_model": "m", "status_code": 200,
            **extra}  # fmt: skip


def test_nul_characters_are_cut_from_every_string():
    assert storable({"a\x00": ["x\x00y", 1, {"k": "\x00"}]}) == {"a": ["xy", 1, {"k": ""}]}


def test_a_trace_with_nul_characters_is_stored_and_does_not_hold_back_the_others(writer):
    # given a hostile trace (NUL in a client-sent model name and in the decision JSON)
    # queued between two ordinary ones
    workspace = Workspace.objects.create(slug=f"w-{uuid.uuid4().hex[:8]}", name="W")
    good = [_fields(workspace.pk), _fields(workspace.pk)]
    hostile = _fields(workspace.pk, requested_model="evil\x00model",
                      decision={"request": {"requested_model": "evil\x00model"}})  # fmt: skip

    async def write() -> None:
        writer.record(good[0])
        writer.record(hostile)
        writer.record(good[1])
        await writer.flush()

    # when
    asyncio.run(write())
    # then all three are stored, the NUL cut out, and nothing is left queued
    stored = RequestTrace.objects.filter(workspace_id=workspace.pk)
    assert stored.count() == 3
    assert stored.get(id=hostile["id"]).requested_model == "evilmodel"
    assert writer.pending() == []


def test_a_row_the_database_refuses_is_dropped_alone(writer):
    # given a trace whose status breaks its column's check, queued with an ordinary one
    workspace = Workspace.objects.create(slug=f"w-{uuid.uuid4().hex[:8]}", name="W")
    ordinary, refused = _fields(workspace.pk), _fields(workspace.pk, status_code=-1)

    async def write() -> None:
        writer.record(refused)
        writer.record(ordinary)
        await writer.flush()

    # when
    asyncio.run(write())
    # then the ordinary one is stored and nothing stays queued behind the refused one
    assert list(RequestTrace.objects.filter(workspace_id=workspace.pk).values_list(
        "id", flat=True)) == [ordinary["id"]]  # fmt: skip
    assert writer.pending() == []


@pytest.mark.live
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
