"""Concurrent rebuilds of the same counters share one (budgets/redis/single_flight.py):
a waiter that leaves cancels no one else's, and a failure reaches every waiter and is
tried again by the next caller."""

from __future__ import annotations

import asyncio

import pytest

from budgets.redis.single_flight import SingleFlight
from tests.waiting import until


class Rebuilds:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.release = asyncio.Event()
        self.fail = fail

    async def __call__(self, names: list[str]) -> None:
        self.calls.append(names)
        await self.release.wait()
        if self.fail:
            raise RuntimeError("ledger away")


def test_callers_of_overlapping_names_share_the_rebuild_under_way() -> None:
    async def run() -> None:
        rebuilds = Rebuilds()
        flight = SingleFlight(rebuilds)
        waiters = [asyncio.create_task(flight.run(["a", "b"])) for _ in range(50)]
        waiters.append(asyncio.create_task(flight.run(["b", "c"])))
        # (the rebuilds start once every waiter has asked: the waiters' tasks run first)
        await until(lambda: len(rebuilds.calls) >= 2, "the waiters' rebuilds under way")
        rebuilds.release.set()
        await asyncio.gather(*waiters)
        assert rebuilds.calls == [["a", "b"], ["c"]]
        await flight.run(["a"])  # done, not remembered: a later miss rebuilds again
        assert rebuilds.calls[-1] == ["a"]

    asyncio.run(run())


def test_a_cancelled_waiter_does_not_cancel_the_others() -> None:
    async def run() -> None:
        rebuilds = Rebuilds()
        flight = SingleFlight(rebuilds)
        first = asyncio.create_task(flight.run(["a"]))
        second = asyncio.create_task(flight.run(["a"]))
        await until(lambda: rebuilds.calls, "the waiters' rebuild under way")
        first.cancel()
        await until(first.done, "the first waiter's cancellation delivered")
        rebuilds.release.set()
        await second
        with pytest.raises(asyncio.CancelledError):
            await first
        assert rebuilds.calls == [["a"]]

    asyncio.run(run())


def test_a_failed_rebuild_fails_its_waiters_and_the_next_caller_tries_again() -> None:
    async def run() -> None:
        rebuilds = Rebuilds(fail=True)
        flight = SingleFlight(rebuilds)
        waiters = [asyncio.create_task(flight.run(["a"])) for _ in range(3)]
        await until(lambda: rebuilds.calls, "the waiters' rebuild under way")
        rebuilds.release.set()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        assert [type(r) for r in results] == [RuntimeError] * 3
        rebuilds.fail = False
        await flight.run(["a"])
        assert len(rebuilds.calls) == 2

    asyncio.run(run())
