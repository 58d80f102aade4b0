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
