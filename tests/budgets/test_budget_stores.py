"""The three budget stores hold the same contract (SPEC R-POL-2, R-LIM-2, R-BEY-9): 200
concurrent reservations against a cap of exactly 20 admit exactly 20, whatever the
interleaving; settling is once; a reservation whose request never settled is swept and
charged whole; the counters rebuild from the ledger (a new process, a Redis flush).

The memory store runs everywhere; the database store on PostgreSQL (SQLite serialises
writers by locking the file, which is not what is being tested); the Redis store with
REDIS_URL. The race repeats SWITCHYARD_RACE_REPEATS times (1; CI's runs set 10, a slow
run 100)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid

import pytest
import redis.asyncio as redis
from django.db import connection

from budgets.models import SpendEntry
from budgets.redis.store import RedisBudgetStore, shared_pool
from budgets.rules.budgets import BudgetRule, charges
from budgets.rules.holds import Hold
from budgets.stores.budget_store import BudgetStore, MemoryBudgetStore, ledger_entries
from budgets.stores.database import DatabaseBudgetStore
from budgets.stores.ledger import Ledger
from tests.budgets.conftest import redis_prefix, run_sync

pytestmark = pytest.mark.django_db(transaction=True)


REPEATS = int(os.environ.get("SWITCHYARD_RACE_REPEATS", "1"))
WORST = 1_000  # micro-dollars a request reserves


def ledger() -> Ledger:
    return Ledger(flush_s=0.01, run_sync=run_sync)


def memory_store() -> MemoryBudgetStore:
    return MemoryBudgetStore(ledger())


def database_store() -> DatabaseBudgetStore:
    if connection.vendor != "postgresql":
        pytest.skip("the database store's race is PostgreSQL's row locking")
    return DatabaseBudgetStore(run_sync)


def redis_store() -> RedisBudgetStore:
    if not os.environ.get("REDIS_URL"):
        pytest.skip("the Redis store needs REDIS_URL")
    client = redis.Redis(connection_pool=shared_pool(os.environ["REDIS_URL"]))
    prefix = redis_prefix()
    return RedisBudgetStore(client, ledger(), prefix)


STORES = [memory_store, database_store, redis_store]


def hold(scope: str, request: str, now: float, amount: int = WORST, cap: int = 20 * WORST,
         expires_in_s: float = 60) -> Hold:  # fmt: skip
    owed = charges([BudgetRule(scope, "daily", cap)], now)
    return Hold(request, 1, owed, amount, now + expires_in_s)


@pytest.mark.slow
@pytest.mark.parametrize("make", STORES, ids=["memory", "database", "redis"])
def test_r_pol_2_two_hundred_at_once_against_twenty_admit_twenty(make) -> None:
    async def race() -> None:
        store: BudgetStore = make()
        for repeat in range(REPEATS):
            scope, now = f"ws:race-{uuid.uuid4().hex[:8]}", time.time()
            holds = [hold(scope, f"{scope}-{i}", now) for i in range(200)]
            verdicts = await asyncio.gather(*(store.reserve(h) for h in holds))
            admitted = [h for h, v in zip(holds, verdicts, strict=True) if v.admitted]
            assert len(admitted) == 20, f"repeat {repeat}"
            assert all(v.remaining_micros >= 0 for v in verdicts if v.admitted)
            refused = [v for v in verdicts if not v.admitted]
            assert {v.remaining_micros for v in refused} == {0}
            await asyncio.gather(*(store.settle(h, WORST // 2, now) for h in admitted))
            state = await store.read([admitted[0].charges[0].counter])
            counted = state[admitted[0].charges[0].counter]
            assert (counted.spent_micros, counted.reserved_micros) == (10 * WORST, 0)

    asyncio.run(race())


@pytest.mark.parametrize("make", STORES, ids=["memory", "database", "redis"])
def test_r_lim_2_a_reservation_settles_once(make) -> None:
    async def settle_twice() -> None:
        store, now = make(), time.time()
        request = hold(f"ws:once-{uuid.uuid4().hex[:8]}", "once", now)
        assert (await store.reserve(request)).admitted
        first = await store.settle(request, 300, now)
        second = await store.settle(request, 300, now)
        assert first is not None
        assert second is None
        counter = request.charges[0].counter
        assert first.after[counter] - first.before[counter] == 300
        assert (await store.read([counter]))[counter].spent_micros == 300

    asyncio.run(settle_twice())


def test_r_lim_2_redis_forgets_a_settled_reservation_an_hour_after_it_would_have_expired() -> None:
    async def settle() -> None:
        store, now = redis_store(), time.time()
        request = hold(f"ws:marker-{uuid.uuid4().hex[:8]}", f"marker-{uuid.uuid4().hex}", now,
                       expires_in_s=120)  # fmt: skip
        assert (await store.reserve(request)).admitted
        assert await store.settle(request, 300, now) is not None
        # then what makes a second settlement a no-op is kept past the last moment one could
        # come (the reservation's expiry), not a day for every budgeted request
        ttl = await store.client.ttl(store.hold_keys(request.workspace_id, request.request_id)[2])
        assert 120 < ttl <= 120 + 3600
        assert await store.settle(request, 300, now) is None

    asyncio.run(settle())


@pytest.mark.parametrize("make", STORES, ids=["memory", "database", "redis"])
def test_r_lim_2_an_abandoned_reservation_is_swept_and_charged_whole(make) -> None:
    async def abandon() -> None:
        store, now = make(), time.time()
        gone = hold(f"ws:swept-{uuid.uuid4().hex[:8]}", "gone", now, expires_in_s=-1)
        assert (await store.reserve(gone)).admitted
        # when the sweeper runs after its expiry (its process died mid-request)
        swept = await store.sweep(now, [gone.workspace_id])
        # then it was charged its whole reservation, once, and a late settlement is ignored
        assert [h.request_id for h in swept] == ["gone"]
        assert await store.settle(gone, 1, now) is None
        counter = gone.charges[0].counter
        state = (await store.read([counter]))[counter]
        assert (state.spent_micros, state.reserved_micros) == (WORST, 0)
        await getattr(store, "ledger", ledger()).flush()
        entries = await run_sync(lambda: list(SpendEntry.objects.filter(request_id="gone")))()
        assert [(e.kind, e.cost_micros) for e in entries] == [("expired", WORST)]

    asyncio.run(abandon())


def test_r_lim_2_a_redis_flush_rebuilds_the_counters_from_the_ledger() -> None:
    async def flush() -> None:
        store, now = redis_store(), time.time()
        scope = f"ws:flush-{uuid.uuid4().hex[:8]}"
        counter = await _spent_three_times_400(store, scope, now)
        await store.ledger.flush()
        # when Redis loses everything under this store's keys
        await _lose_everything(store)
        # then the next reservation finds the spending again, nothing lost
        verdict = await store.reserve(hold(scope, f"{scope}-after", now))
        assert verdict.admitted
        assert verdict.remaining_micros == 20 * WORST - 3 * 400 - WORST
        assert (await store.read([counter]))[counter].requests == 3 + 1  # and this one

    asyncio.run(flush())


def test_r_lim_2_a_settlement_after_a_redis_flush_leaves_the_counter_to_the_ledger() -> None:
    async def flush() -> None:
        store, now = redis_store(), time.time()
        scope = f"ws:flush-first-{uuid.uuid4().hex[:8]}"
        counter = await _spent_three_times_400(store, scope, now)
        in_flight = hold(scope, f"{scope}-in-flight", now)
        assert (await store.reserve(in_flight)).admitted
        # when Redis loses everything with a request in flight, which settles first
        await _lose_everything(store)
        await store.settle(in_flight, 500, now)
        await store.ledger.flush()  # (its row stored: this test's pool writes beside reads)
        # then the next reservation still finds all the spending: the settlement did not
        # make a counter of its own cost alone, which would have stood for the period
        verdict = await store.reserve(hold(scope, f"{scope}-after", now))
        assert verdict.remaining_micros == 20 * WORST - 3 * 400 - 500 - WORST
        assert (await store.read([counter]))[counter].requests == 3 + 1 + 1

    asyncio.run(flush())


async def _spent_three_times_400(store: RedisBudgetStore, scope: str, now: float) -> str:
    """Three requests reserved and settled at 400 µ$ each; their counter."""
    for i in range(3):
        request = hold(scope, f"{scope}-{i}", now)
        assert (await store.reserve(request)).admitted
        await store.settle(request, 400, now)
    return request.charges[0].counter


async def _lose_everything(store: RedisBudgetStore) -> None:
    """What a flush does to this store's keys."""
    keys = [key async for key in store.client.scan_iter(match=f"{store.prefix}:*:budget:*")]
    await store.client.delete(*keys)


def test_r_lim_2_a_burst_on_a_new_period_rebuilds_its_counter_from_the_ledger_once() -> None:
    async def burst() -> None:
        store, now = redis_store(), time.time()
        scope = f"ws:burst-{uuid.uuid4().hex[:8]}"
        earlier = hold(scope, f"{scope}-earlier", now)
        store.ledger.record(ledger_entries(earlier, 3 * WORST, "settled", now))
        await store.ledger.flush()
        queries: list[list[str]] = []
        totals = store.ledger.totals

        async def counted(counters):  # type: ignore[no-untyped-def]
            queries.append(list(counters))
            return await totals(counters)

        store.ledger.totals = counted  # type: ignore[method-assign]
        # when 200 requests find the counter missing at once
        holds = [hold(scope, f"{scope}-{i}", now) for i in range(200)]
        verdicts = await asyncio.gather(*(store.reserve(h) for h in holds))
        # then one ledger query rebuilt it for all of them, with what was spent before — or
        # a second, no-op one: a reply read after the first rebuild ended, though its call
        # reached Redis before the rebuild did (seen once in CI on a loaded machine). Each
        # request rebuilding alone made 200.
        assert 1 <= len(queries) <= 3, len(queries)
        assert {tuple(q) for q in queries} == {(earlier.charges[0].counter,)}
        assert sum(v.admitted for v in verdicts) == 17  # 20 worst cases, 3 already spent

    asyncio.run(burst())


def test_r_lim_2_the_memory_store_of_a_new_process_starts_from_the_ledger() -> None:
    async def restart() -> None:
        first, now = memory_store(), time.time()
        request = hold("ws:restart", "before", now)
        await first.reserve(request)
        await first.settle(request, 700, now)
        await first.ledger.flush()
        # when a new process's store sees the counter
        verdict = await memory_store().reserve(hold("ws:restart", "after", now))
        # then it knows what was spent before it existed
        assert verdict.remaining_micros == 20 * WORST - 700 - WORST

    asyncio.run(restart())
