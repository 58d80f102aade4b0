"""The miss lookups of keys the snapshot does not know (SPEC R-KEY-1, D-3;
gateway/state/key_lookups.py), without a database: one lookup at a time per key id, a
short memory of ids found unknown, and a per-worker budget of lookups, so a flood of
random keys costs the database no more than that budget."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from gateway.state.key_lookups import KeyLookups
from tests.waiting import until


class FakeDatabase:
    """Counts the lookups; each one waits until `release` is set, so they overlap."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.asked: list[str] = []
        self.release = asyncio.Event()
        self.fail = False
        self.waiting = 0  # lookups waiting for `release`

    async def find(self, lookup_id: str) -> bool:
        self.asked.append(lookup_id)
        self.waiting += 1
        try:
            await self.release.wait()
        finally:
            self.waiting -= 1
        if self.fail:
            raise ConnectionError("database away")
        return lookup_id in self.known


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lookups(db: FakeDatabase, clock: Clock, **limits: float) -> KeyLookups:
    return KeyLookups(db.find, clock=clock, **limits)  # type: ignore[arg-type]


def _all_waiting(db: FakeDatabase, *tasks: asyncio.Task[bool]) -> bool:
    """A lookup waits on the database, and every task has reached its wait (or answered
    without one)."""
    started = (inspect.getcoroutinestate(t.get_coro()) != inspect.CORO_CREATED for t in tasks)
    return db.waiting > 0 and all(started)


async def _released(db: FakeDatabase, *waiting: asyncio.Task[bool]) -> list[bool]:
    await until(lambda: _all_waiting(db, *waiting), "every task waiting on a database lookup")
    db.release.set()
    return list(await asyncio.gather(*waiting))


@pytest.mark.parametrize("known", [True, False])
def test_r_key_1_concurrent_misses_on_one_key_id_make_one_lookup(known):
    async def scenario() -> None:
        db, clock = FakeDatabase({"newkey000001"} if known else set()), Clock()
        lookups = _lookups(db, clock)
        # when 50 requests with the same key id miss the snapshot at once
        waiting = [asyncio.create_task(lookups.exists("newkey000001")) for _ in range(50)]
        # then the database is asked once and every request has its answer
        assert await _released(db, *waiting) == [known] * 50
        assert db.asked == ["newkey000001"]

    asyncio.run(scenario())


def test_d_3_an_unknown_key_id_is_not_asked_again_until_its_memory_lapses():
    async def scenario() -> None:
        db, clock = FakeDatabase(set()), Clock()
        db.release.set()
        lookups = _lookups(db, clock, unknown_ttl_s=10.0)
        assert await lookups.exists("unknown00001") is False
        # when the same unknown id comes again and again within the memory
        for _ in range(100):
            clock.now += 0.05
            assert await lookups.exists("unknown00001") is False
        # then it was asked once; after the memory lapses, once more
        assert db.asked == ["unknown00001"]
        clock.now += 10.0
        assert await lookups.exists("unknown00001") is False
        assert db.asked == ["unknown00001"] * 2

    asyncio.run(scenario())


def test_d_3_a_flood_of_random_key_ids_stays_within_the_lookup_budget():
    async def scenario() -> None:
        db, clock = FakeDatabase(set()), Clock()
        db.release.set()
        lookups = _lookups(db, clock, lookups_per_s=20.0, burst=20)
        # when 10 000 different key ids miss within 2 s
        for n in range(10_000):
            clock.now = 1000.0 + 2.0 * n / 10_000
            assert await lookups.exists(f"random{n:06d}") is False
        # then at most the burst and 2 s of the rate were looked up
        assert 20 <= len(db.asked) <= 20 + 2 * 20 + 1

    asyncio.run(scenario())


def test_r_key_1_a_new_key_is_looked_up_once_the_budget_refills():
    async def scenario() -> None:
        db, clock = FakeDatabase({"newkey000002"}), Clock()
        db.release.set()
        lookups = _lookups(db, clock, lookups_per_s=10.0, burst=2)
        for n in range(5):  # the budget is spent on unknown ids
            await lookups.exists(f"random{n:06d}")
        # a spent budget answers "not known" without asking (the snapshot poll then decides)
        assert await lookups.exists("newkey000002") is False
        assert "newkey000002" not in db.asked
        # and a refilled one asks, and the key is found
        clock.now += 0.1
        assert await lookups.exists("newkey000002") is True

    asyncio.run(scenario())


def test_r_key_1_a_failed_lookup_is_not_remembered_as_unknown():
    async def scenario() -> None:
        db, clock = FakeDatabase({"newkey000003"}), Clock()
        lookups = _lookups(db, clock)
        db.fail = True
        waiting = [asyncio.create_task(lookups.exists("newkey000003")) for _ in range(3)]
        await until(lambda: _all_waiting(db, *waiting), "every task waiting on a database lookup")
        db.release.set()
        failed = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(result, ConnectionError) for result in failed)
        db.fail = False
        assert await lookups.exists("newkey000003") is True
        assert db.asked == ["newkey000003"] * 2

    asyncio.run(scenario())


def test_r_key_1_a_waiter_that_is_cancelled_leaves_the_lookup_to_the_others():
    async def scenario() -> None:
        db, clock = FakeDatabase({"newkey000004"}), Clock()
        lookups = _lookups(db, clock)
        first = asyncio.create_task(lookups.exists("newkey000004"))
        second = asyncio.create_task(lookups.exists("newkey000004"))
        await until(lambda: _all_waiting(db, first, second), "both waiting on a database lookup")
        first.cancel()  # its client hung up
        assert await _released(db, second) == [True]
        assert db.asked == ["newkey000004"]

    asyncio.run(scenario())


def test_d_3_the_memory_of_unknown_ids_is_bounded():
    async def scenario() -> None:
        db, clock = FakeDatabase(set()), Clock()
        db.release.set()
        lookups = _lookups(db, clock, lookups_per_s=1e9, burst=1e9, max_unknown=100)
        for n in range(1000):
            await lookups.exists(f"random{n:06d}")
        assert lookups.remembered_unknown() <= 100

    asyncio.run(scenario())
