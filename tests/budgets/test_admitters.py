"""Taking rate limits and a budget reservation together (budgets/admitter.py,
redis_admitter.py; SPEC R-LIM-1, R-LIM-2): when the limits refuse, nothing stays reserved
on the budget and nothing is counted; when the budget refuses, the limits are given back.
The in-process admitter always; the Redis one (one pipeline, batched settlements) with
REDIS_URL."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import pytest
import redis.asyncio as redis
from asgiref.sync import sync_to_async

from budgets.admitter import GiveBack, StoreAdmitter
from budgets.redis.admitter import RedisAdmitter
from budgets.redis.limits import RedisLimiter
from budgets.redis.store import RedisBudgetStore, shared_pool
from budgets.rules.budgets import BudgetRule, charges
from budgets.rules.holds import BudgetStoreUnavailable, Hold
from budgets.rules.limits import LimitSpec
from budgets.stores.budget_store import MemoryBudgetStore
from budgets.stores.ledger import Ledger
from budgets.stores.limit_store import MemoryLimiter
from fakeupstream.process import free_port
from tests.budgets.conftest import redis_prefix
from tests.waiting import until

pytestmark = pytest.mark.django_db(transaction=True)


def _ledger() -> Ledger:
    return Ledger(flush_s=3600, run_sync=lambda f: sync_to_async(f, thread_sensitive=False))


def memory_admitter() -> StoreAdmitter:
    return StoreAdmitter(MemoryLimiter(), MemoryBudgetStore(_ledger()))


def redis_admitter() -> RedisAdmitter:
    if not os.environ.get("REDIS_URL"):
        pytest.skip("the Redis admitter needs REDIS_URL")
    client = redis.Redis(connection_pool=shared_pool(os.environ["REDIS_URL"]))
    prefix = redis_prefix()
    limiter = RedisLimiter(client, prefix=prefix)
    budgets = RedisBudgetStore(client, _ledger(), prefix)
    return RedisAdmitter(limiter, budgets, client)


ADMITTERS = [memory_admitter, redis_admitter]


def _hold(request: str, now: float, cap: int = 10_000) -> Hold:
    return Hold(request, 1, charges([BudgetRule("ws:1", "daily", cap)], now), 1000, now + 60)


@pytest.mark.parametrize("make", ADMITTERS, ids=["memory", "redis"])
def test_r_lim_1_a_request_its_limits_refuse_reserves_nothing(make) -> None:
    async def run() -> None:
        admitter, now = make(), time.time()
        limits = [LimitSpec("key:1:bot", requests_per_minute=1)]
        first = await admitter.take(limits, 10, "one", _hold("one", now), now)
        # when a second request finds the limit spent
        second = await admitter.take(limits, 10, "two", _hold("two", now), now)
        # then it is refused, and the budget holds the first one's reservation alone
        assert first.admitted
        assert not second.admitted
        assert second.budget is None
        counter = _hold("x", now).charges[0].counter
        state = (await admitter.budgets.read([counter]))[counter]
        assert (state.reserved_micros, state.requests) == (1000, 1)
        # and when the first ends, its cost is all that counts
        back = GiveBack(tuple(limits), "one", 10, 10, _hold("one", now), 400, now)
        await admitter.give_back(back)
        state = (await admitter.budgets.read([counter]))[counter]
        assert (state.spent_micros, state.reserved_micros, state.requests) == (400, 0, 1)

    asyncio.run(run())


@pytest.mark.parametrize("make", ADMITTERS, ids=["memory", "redis"])
def test_r_lim_2_a_request_its_budget_refuses_gives_its_lease_and_tokens_back(make) -> None:
    async def run() -> None:
        admitter, now = make(), time.time()
        limits = [LimitSpec("key:1:bot", tokens_per_minute=10, concurrent=1)]
        # when the budget has no room
        refused = await admitter.take(limits, 10, "big", _hold("big", now, cap=500), now)
        # then its concurrency slot and its tokens went back: the next one is admitted
        # (a requests-per-minute limit would still count it: it was a request)
        assert not refused.admitted
        assert (await admitter.take(limits, 10, "next", None, now)).admitted

    asyncio.run(run())


def test_admissions_asked_for_at_once_share_a_pipeline_each_getting_its_own_verdict() -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        sent: list[int] = []
        send = admitter._send

        async def counted(calls, meanwhile=None, given_up=None):  # type: ignore[no-untyped-def]
            sent.append(len(calls))
            return await send(calls, meanwhile, given_up)

        admitter._send = counted  # type: ignore[method-assign]
        limits = [LimitSpec("key:1:bot", requests_per_minute=3)]
        # when five requests of one key ask at once, its limit with room for three
        # (the budget has room for all: a request it refused would free its slot)
        taken = await asyncio.gather(*(
            admitter.take(limits, 10, f"r{i}", _hold(f"r{i}", now), now)
            for i in range(5)
        ))  # fmt: skip
        # then the first one's two script calls went at once, and the other four's eight
        # together when its replies came (after them, the budget's new counters are built
        # from the ledger and its reservations asked for again)
        assert sent[:2] == [2, 8]
        # and each got its own verdict: the first three, in order, admitted
        assert [t.admitted for t in taken] == [True, True, True, False, False]
        assert [t.limits.admitted for t in taken if t.limits] == [True] * 3 + [False] * 2
        # the refused ones gave back their reservations: three holds stay
        counter = _hold("x", now).charges[0].counter
        state = (await admitter.budgets.read([counter]))[counter]
        assert (state.reserved_micros, state.requests) == (3000, 3)
        # and a request alone still gets its answer
        assert not (await admitter.take(limits, 10, "late", None, now)).admitted

    asyncio.run(run())


def test_admissions_asked_for_while_a_pipeline_is_out_go_together_when_its_replies_come() -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        # (the period's counters made: no rebuild and second ask to count)
        assert (await admitter.take([], 0, "warm", _hold("warm", now), now)).admitted
        sent = _counting_pipelines(admitter)
        counted = admitter._send
        out: list[int] = []  # the pipelines sent, each held until `answered` is set
        answered = asyncio.Event()

        async def held(calls, meanwhile=None, given_up=None):  # type: ignore[no-untyped-def]
            out.append(len(calls))
            await answered.wait()  # a round trip that lasts until the others have asked
            return await counted(calls, meanwhile, given_up)

        admitter._send = held  # type: ignore[method-assign]
        # when one request's admission is out and three more ask, each in a turn of its own
        first = asyncio.ensure_future(admitter.take([], 0, "r0", _hold("r0", now), now))
        await until(lambda: out, "the first admission's pipeline out")
        later = []
        for i in range(1, 4):
            later.append(asyncio.ensure_future(
                admitter.take([], 0, f"r{i}", _hold(f"r{i}", now), now)
            ))  # fmt: skip
            await until(lambda n=i: len(admitter._takes) == n, f"r{i}'s admission asked for")
        answered.set()
        taken = await asyncio.gather(first, *later)
        # then the three went in one pipeline once the first one's replies came
        assert sent == [["reserve"], ["reserve"] * 3]
        assert all(t.admitted for t in taken)
        # and once they have ended, on the idle worker, a lone admission goes at once,
        # alone, from its own task
        names = ["warm", *(f"r{i}" for i in range(4))]
        await asyncio.gather(*(
            admitter.give_back(GiveBack((), name, 0, 0, _hold(name, now), 0, now))
            for name in names
        ))  # fmt: skip
        sent.clear()
        senders = 0
        send_takes = admitter._send_takes

        async def sender():  # type: ignore[no-untyped-def]
            nonlocal senders
            senders += 1
            await send_takes()

        admitter._send_takes = sender  # type: ignore[method-assign]
        assert (await admitter.take([], 0, "r4", _hold("r4", now), now)).admitted
        assert sent == [["reserve"]]
        assert senders == 0

    asyncio.run(run())


def test_an_admissions_work_meanwhile_runs_once_on_an_idle_worker_only() -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        ran: list[str] = []

        def meanwhile(name: str):  # type: ignore[no-untyped-def]
            return lambda: ran.append(name)

        # when a lone admission on an idle worker has work to do while Redis answers
        assert (await admitter.take([], 0, "r0", _hold("r0", now), now, meanwhile("r0"))).admitted
        # then it ran, once
        assert ran == ["r0"]
        # and when three more ask at once, while it is under way (the worker is busy)
        taken = await asyncio.gather(*(
            admitter.take([], 0, f"r{i}", _hold(f"r{i}", now), now, meanwhile(f"r{i}"))
            for i in range(1, 4)
        ))  # fmt: skip
        # then theirs did not run (their requests do that work once admitted)
        assert ran == ["r0"]
        assert all(t.admitted for t in taken)

    asyncio.run(run())


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
def test_r_pol_2_a_request_that_gives_up_while_redis_answers_keeps_nothing(busy) -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        limits = [LimitSpec("key:1:bot", concurrent=1)]
        counter = _hold("x", now).charges[0].counter
        # (the period's counter made: the reservation is taken at the first ask)
        assert (await admitter.take([], 0, "warm", _hold("warm", now), now)).admitted
        await admitter.give_back(GiveBack((), "warm", 0, 0, _hold("warm", now), 0, now))
        if busy:  # another admitted request under way: admissions go in the turn's pipeline
            assert (await admitter.take([], 0, "other", _hold("other", now), now)).admitted
        before = (await admitter.budgets.read([counter]))[counter]
        # when a request's client leaves once its admission's calls are out (or queued for
        # this turn's pipeline), before their replies come
        gone = _hold("gone", now)
        asked = _asking(admitter)
        leaving = asyncio.ensure_future(admitter.take(limits, 10, "gone", gone, now))
        # (its first step: the calls handed to their pipeline, its replies awaited; polled
        # every turn, so that it leaves in the very turn they went out, before a reply)
        await until(asked, "its admission's calls out", interval_s=0)
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving

        # then once Redis has answered, what it took is given back: nothing reserved or
        # counted on the budget, and the concurrency lease free for the next request
        async def budget() -> tuple[int, int]:
            after = (await admitter.budgets.read([counter]))[counter]
            return (after.reserved_micros, after.requests)

        # (waited for by the reservation's `done` marker, which the give-back sets: the
        # counter alone reads the same before Redis has run the reservation as after the
        # give-back, and another connection's read can overtake the pipeline's write)
        done = admitter.budgets.hold_keys(gone.workspace_id, gone.request_id)[2]
        await until(lambda: admitter.budgets.client.exists(done), "its give-back", interval_s=0.01)
        assert await budget() == (before.reserved_micros, before.requests)
        assert (await admitter.take(limits, 10, "next", None, now)).admitted

    asyncio.run(run())


def _asking(admitter: RedisAdmitter) -> Callable[[], bool]:
    """Whether an admission's calls are out from now on: handed to a pipeline (its task
    started), or queued for this turn's pipeline."""
    sent: list[int] = []
    send = admitter._send

    async def counted(calls, meanwhile=None, given_up=None):  # type: ignore[no-untyped-def]
        sent.append(len(calls))
        return await send(calls, meanwhile, given_up)

    admitter._send = counted  # type: ignore[method-assign]
    return lambda: bool(admitter._takes or sent)


def _counting_pipelines(admitter: RedisAdmitter) -> list[list[str]]:
    """The script names of each pipeline `admitter` sends from now on."""
    sent: list[list[str]] = []
    send = admitter._send
    scripts = {admitter.budgets.scripts[0]: "reserve", admitter.budgets.scripts[1]: "settle"}

    async def counted(calls, meanwhile=None, given_up=None):  # type: ignore[no-untyped-def]
        sent.append([scripts.get(script, "limit") for script, _ in calls])
        return await send(calls, meanwhile, given_up)

    admitter._send = counted  # type: ignore[method-assign]
    return sent


async def _load_scripts(admitter: RedisAdmitter) -> None:
    """Loaded: no NOSCRIPT retry pipeline to count."""
    for script in (*admitter.budgets.scripts, *admitter.limiter.scripts):
        script.sha = await admitter.budgets.client.script_load(script.script)


def test_a_settlement_waiting_rides_in_the_next_admissions_pipeline_ahead_of_it(
    monkeypatch,
) -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        sent = _counting_pipelines(admitter)
        # (its wait for company lasts however long the second request takes to ask)
        monkeypatch.setattr("budgets.redis.admitter.SETTLE_BATCH_S", 3600)
        cap = 2_500  # room for two reservations of 1,000, not three
        first = await admitter.take([], 0, "one", _hold("one", now, cap), now)
        # another request under way: more are coming, the settlement waits for one
        assert (await admitter.take([], 0, "busy", _hold("busy", now, cap), now)).admitted
        sent.clear()
        # when the first request ends (400 spent) and, before the settlements' wait is
        # over, a second asks for its reservation
        back = asyncio.ensure_future(
            admitter.give_back(GiveBack((), "one", 0, 0, _hold("one", now, cap), 400, now))
        )
        await until(lambda: admitter._queue and admitter._flush_timer, "the settlement queued")
        second = await admitter.take([], 0, "two", _hold("two", now, cap), now)
        # then both went in one pipeline, the settlement first, so the second request
        # found the first one's unused reservation freed and was admitted
        assert sent == [["settle", "reserve"]]
        assert first.admitted
        assert second.admitted
        settled = await asyncio.wait_for(back, timeout=0.001)  # settled by then
        assert settled is not None
        counter = _hold("x", now).charges[0].counter
        state = (await admitter.budgets.read([counter]))[counter]
        assert (state.spent_micros, state.reserved_micros) == (400, 2000)

    asyncio.run(run())


def test_the_last_request_under_way_settles_at_once_with_no_admission_to_wait_for(
    monkeypatch,
) -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        sent = _counting_pipelines(admitter)
        # (were it to wait for company, it would wait all of this)
        monkeypatch.setattr("budgets.redis.admitter.SETTLE_BATCH_S", 3600)
        assert (await admitter.take([], 0, "one", _hold("one", now), now)).admitted
        sent.clear()
        # when the worker's only request ends
        back = GiveBack((), "one", 0, 0, _hold("one", now), 400, now)
        settled = await asyncio.wait_for(admitter.give_back(back), timeout=5)
        # then its settlement went alone, right away: the next request's admission will
        # not carry its script
        assert settled is not None
        assert sent == [["settle"]]

    asyncio.run(run())


def test_r_lim_2_a_settlement_redis_cannot_take_still_reaches_the_ledger() -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        hold = _hold("gone", now)
        assert (await admitter.take([], 0, "gone", hold, now)).admitted
        # given Redis goes away while the request runs
        reachable = admitter.client
        admitter.client = redis.Redis(  # nothing listens
            connection_pool=shared_pool(f"redis://127.0.0.1:{free_port()}")
        )
        # when the request ends, its settlement fails
        with pytest.raises(BudgetStoreUnavailable):
            await asyncio.wait_for(admitter.give_back(GiveBack((), "gone", 0, 0, hold, 400, now)),
                                   timeout=10)  # fmt: skip
        # then its cost is in the ledger all the same
        counter = hold.charges[0].counter
        pending = admitter.budgets.ledger.pending()
        assert [(e.request_id, e.counter, e.cost_micros, e.kind) for e in pending] == [
            ("gone", counter, 400, "settled")
        ]
        # and a Redis that comes back empty (a restart) counts it: rebuilt from the ledger
        await admitter.budgets.client.delete(
            *await admitter.budgets.client.keys(f"{admitter.budgets.prefix}:*:budget:*")
        )
        admitter.client = reachable
        assert (await admitter.budgets.read([counter]))[counter].spent_micros == 400

    asyncio.run(run())


def test_scripts_redis_no_longer_holds_are_loaded_again_and_only_their_calls_rerun() -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        # (the period's counter made: no rebuild and second ask to count)
        assert (await admitter.take([], 0, "warm", _hold("warm", now), now)).admitted
        sent = _counting_pipelines(admitter)
        reserve = admitter.budgets.scripts[0]
        # given a Redis that lost the reserve script (a restart): its calls answer NOSCRIPT
        loaded, reserve.sha = reserve.sha, "0" * 40
        limits = [LimitSpec("key:1:bot", requests_per_minute=10)]
        # when a request asks to be admitted on its limit and its budget
        taken = await admitter.take(limits, 10, "r", _hold("r", now), now)
        # then the script was loaded again and the reservation asked for again, alone
        # (the limit's script had run: sent again, it would count the request twice)
        assert taken.admitted
        assert reserve.sha == loaded
        assert sent == [["limit", "reserve"], ["reserve"]]
        (use,) = await admitter.limiter.usage(limits, now=time.time())
        assert 0.9 < use.used <= 1

    asyncio.run(run())


def test_r_lim_1_an_admission_redis_cannot_be_reached_for_is_refused_as_unavailable() -> None:
    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        # given a worker whose Redis is away (nothing listens)
        admitter.client = redis.Redis(
            connection_pool=shared_pool(f"redis://127.0.0.1:{free_port()}")
        )
        # when a budgeted, limited request asks to be admitted
        limits = [LimitSpec("key:1:bot", requests_per_minute=10)]
        started = time.monotonic()
        with pytest.raises(BudgetStoreUnavailable):
            await admitter.take(limits, 10, "r", _hold("r", now), now)
        # then it is refused (503 budget_store_unavailable), without waiting for long
        assert time.monotonic() - started < 3

    asyncio.run(run())


def test_r_pol_2_a_burst_at_a_periods_start_asks_again_in_the_turns_pipelines() -> None:
    """Every request of a burst finds its new period's counters missing. Asked for again
    through redis-py's pool, each wanted a pooled connection of its own at once, and on a
    loaded machine some timed out connecting: 402s answered as 503s."""

    async def run() -> None:
        admitter, now = redis_admitter(), time.time()
        await _load_scripts(admitter)
        sent = _counting_pipelines(admitter)

        async def pooled(hold):  # type: ignore[no-untyped-def]
            raise AssertionError("a reservation asked for again through the pool")

        admitter.budgets.reserve = pooled  # type: ignore[method-assign]
        cap = 20 * 1000  # room for twenty reservations of 1,000
        # when fifty requests of a period no counter exists for yet ask in one turn
        taken = await asyncio.gather(*(
            admitter.take([], 0, f"r{i}", _hold(f"r{i}", now, cap), now) for i in range(50)
        ))  # fmt: skip
        # then all fifty asked, and once the counters were rebuilt asked again, in a few
        # pipelines (the first request alone, then the others together)
        assert sent[:2] == [["reserve"], ["reserve"] * 49]
        assert sum(len(calls) for calls in sent) == 100
        assert len(sent) <= 4
        # and exactly twenty were admitted
        assert sum(t.admitted for t in taken) == 20
        counter = _hold("x", now).charges[0].counter
        state = (await admitter.budgets.read([counter]))[counter]
        assert (state.reserved_micros, state.requests) == (20_000, 20)

    asyncio.run(run())
