"""A worker's allowances on Redis (budgets/rules/allowance.py, redis_admitter.py; SPEC R-POL-2,
R-LIM-1, R-LIM-2): far from every cap, requests are admitted from a share taken at once,
with no round trip of their own; the share settles to what they cost, gives back what it
did not use, and is charged whole by the sweeper when its worker dies. Near a cap, Redis
admits every request itself. Needs REDIS_URL."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from asgiref.sync import sync_to_async

from budgets.admitter import GiveBack, Taken
from budgets.alerts import Alerts
from budgets.models import BudgetAlert, SpendEntry
from budgets.redis.admitter import RedisAdmitter
from budgets.rules.allowance import Room, shape_of
from budgets.rules.budgets import BudgetRule, charges
from budgets.rules.holds import Hold
from budgets.rules.limits import LimitSpec
from budgets.stores.ledger import stored_totals
from tests.budgets.test_admitters import (
    _counting_pipelines,
    _load_scripts,
    redis_admitter,
)
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db(transaction=True)
WORST = 1000  # each request's worst case, micro-dollars
ROOMY = [LimitSpec("key:1:bot", requests_per_minute=1_000_000)]


def _hold(request: str, now: float, cap: int = 10**12) -> Hold:
    return Hold(request, 1, charges([BudgetRule("key:1:bot", "daily", cap)], now), WORST,
                now + 60)  # fmt: skip


async def _admitter(requests: int = 8) -> RedisAdmitter:
    admitter = redis_admitter()
    admitter.allowance_requests = requests
    await _load_scripts(admitter)
    return admitter


async def _take(admitter: RedisAdmitter, name: str, now: float, limits=ROOMY, cap=10**12) -> Taken:  # type: ignore[no-untyped-def]
    return await admitter.take(limits, 0, name, _hold(name, now, cap), now)


async def _give_back(admitter: RedisAdmitter, taken: Taken, name: str, now: float, cost: int,
                     limits=ROOMY) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    back = GiveBack(tuple(limits), name, 0, 0, _hold(name, now), cost, now, taken.drawn)
    await admitter.give_back(back)


async def _counter(admitter: RedisAdmitter, now: float) -> tuple[int, int, int]:
    counter = _hold("x", now).charges[0].counter
    state = (await admitter.budgets.read([counter]))[counter]
    return state.spent_micros, state.reserved_micros, state.requests


def _no_count(budget: str, threshold: str) -> None:
    """The alerts' metric, which these tests read from the audit events instead."""


def test_r_lim_2_far_from_every_cap_a_worker_admits_from_its_allowance_with_no_round_trip() -> None:
    async def run() -> None:
        admitter, now = await _admitter(requests=8), time.time()
        sent = _counting_pipelines(admitter)
        # the first request is admitted by Redis alone, and its reply shows the room
        first = await _take(admitter, "r0", now)
        assert first.drawn is None
        # the second takes an allowance of eight in one pipeline, and is its first
        second = await _take(admitter, "r1", now)
        assert second.drawn is not None
        opened = len(sent)
        # then seven more need no Redis at all; the ninth finds it used up, takes another
        taken = [second] + [await _take(admitter, f"r{i}", now) for i in range(2, 10)]
        assert len(sent) == opened + 1
        assert all(t.admitted for t in taken)
        assert {id(t.drawn) for t in taken[:8]} == {id(second.drawn)}
        assert taken[8].drawn is not second.drawn
        # each answers with the headers Redis would have given: one request fewer left each
        left = [int(t.limits.headers["x-ratelimit-remaining-requests"]) for t in taken[:8]]
        assert left == list(range(left[0], left[0] - 8, -1))
        assert left[0] <= 1_000_000 - 1
        # when they end (300 each) and the worker shuts down
        await _give_back(admitter, first, "r0", now, 300)
        for i, one in enumerate(taken, start=1):
            await _give_back(admitter, one, f"r{i}", now, 300)
        await admitter.aclose()
        # then Redis holds what the ten cost, nothing reserved, ten requests
        assert await _counter(admitter, now) == (3000, 0, 10)
        # and the ledger a row for the lone request and one for each allowance, with its count
        rows = sorted((e.requests, e.cost_micros) for e in admitter.budgets.ledger.pending())
        assert rows == [(1, 300), (1, 300), (8, 2400)]

    asyncio.run(run())


def test_r_lim_1_an_allowance_gives_back_the_requests_it_did_not_admit() -> None:
    async def run() -> None:
        admitter, now = await _admitter(requests=8), time.time()
        limits = [LimitSpec("key:1:bot", requests_per_minute=6000)]  # drains 100 a second
        await _take(admitter, "r0", now, limits)
        drawn = await _take(admitter, "r1", now, limits)
        assert drawn.drawn is not None
        # while the allowance is open, the limit counts all eight it took, and the first
        # (less what drained meanwhile: 100 a second)
        (used,) = await admitter.limiter.usage(limits, now=now)
        assert used.used > 7.5
        # when it closes with one request admitted, the seven others go back
        await _give_back(admitter, drawn, "r1", now, 300, limits)
        await admitter.aclose()
        (used,) = await admitter.limiter.usage(limits, now=now)
        assert used.used < 2.5

    asyncio.run(run())


def test_r_pol_2_near_the_cap_redis_admits_every_request_itself() -> None:
    async def run() -> None:
        # a budget that admits exactly twenty: far too little room for any allowance
        admitter, now = await _admitter(requests=64), time.time()
        sent = _counting_pipelines(admitter)
        taken = [await _take(admitter, f"r{i}", now, cap=20 * WORST) for i in range(25)]
        assert [t.admitted for t in taken] == [True] * 20 + [False] * 5
        assert all(t.drawn is None for t in taken)
        assert len(sent) >= 25  # one pipeline each (and the new period's rebuild)
        assert await _counter(admitter, now) == (0, 20 * WORST, 20)

    asyncio.run(run())


def test_r_pol_2_once_an_allowance_leaves_too_little_room_for_another_requests_go_alone() -> None:
    async def run() -> None:
        # room for 32 allowances of eight (256,000) after the first request, not after one
        admitter, now = await _admitter(requests=8), time.time()
        taken = [await _take(admitter, f"r{i}", now, cap=260_000) for i in range(11)]
        assert [t.drawn is not None for t in taken] == [False] + [True] * 8 + [False] * 2
        assert all(t.admitted for t in taken)

    asyncio.run(run())


def test_r_pol_2_an_allowance_redis_refuses_takes_nothing_and_the_request_goes_alone() -> None:
    async def run() -> None:
        admitter, now = await _admitter(requests=8), time.time()
        limits = [LimitSpec("key:1:bot", requests_per_minute=5)]
        assert (await _take(admitter, "r0", now, limits)).drawn is None
        # given a stale reading that there is room, when the allowance is asked for,
        # its eight requests do not fit the limit (its reservation would fit the budget)
        admitter._rooms[shape_of(limits, _hold("r1", now))] = Room(None, None)
        taken = await _take(admitter, "r1", now, limits)
        # then the request was admitted by Redis alone, and the allowance left nothing:
        # two requests on the limit and the budget, two reservations
        assert taken.admitted
        assert taken.drawn is None
        (used,) = await admitter.limiter.usage(limits, now=now)
        assert 1.9 < used.used <= 2
        assert await _counter(admitter, now) == (0, 2 * WORST, 2)
        # and the next request goes alone too, until an admission shows room again
        assert (await _take(admitter, "r2", now, limits)).drawn is None

    asyncio.run(run())


def test_r_lim_2_a_worker_killed_with_an_allowance_open_is_charged_it_whole_by_the_sweeper() -> (
    None
):
    async def run() -> None:
        admitter, now = await _admitter(requests=8), time.time()
        first = await _take(admitter, "r0", now)
        await _give_back(admitter, first, "r0", now, 300)
        # a worker opens an allowance, admits two requests from it, and dies
        drawn = [await _take(admitter, f"r{i}", now) for i in (1, 2)]
        allowance = drawn[0].drawn
        assert allowance is not None
        assert allowance.hold is not None
        # when the sweeper runs after its reservation expired
        hold = allowance.hold
        swept = await admitter.budgets.sweep(hold.expires_at + 1, [hold.workspace_id])
        # then it charged the whole reservation: eight requests' worst case
        assert [h.request_id for h in swept] == [allowance.id]
        assert await _counter(admitter, now) == (300 + 8 * WORST, 0, 2)
        row = await asyncio.to_thread(SpendEntry.objects.get, request_id=allowance.id)
        assert (row.kind, row.cost_micros) == ("expired", 8 * WORST)

    asyncio.run(run())


def test_r_pol_2_a_redis_flush_rebuilds_an_allowances_spending_and_requests_from_the_ledger() -> (
    None
):
    async def run() -> None:
        admitter, now = await _admitter(requests=8), time.time()
        taken = [await _take(admitter, f"r{i}", now) for i in range(4)]  # 1 alone, 3 drawn
        for i, one in enumerate(taken):
            await _give_back(admitter, one, f"r{i}", now, 250)
        await admitter.aclose()
        assert await _counter(admitter, now) == (1000, 0, 4)
        await admitter.budgets.ledger.flush()
        counter = _hold("x", now).charges[0].counter
        # when Redis loses the counter
        await admitter.budgets.client.delete(admitter.budgets.counter_key(counter))
        # then it is rebuilt from the ledger: what the four cost, and four requests
        assert await _counter(admitter, now) == (1000, 0, 4)
        totals = await asyncio.to_thread(stored_totals, [counter])
        assert totals[counter] == (1000, 4)

    asyncio.run(run())


def test_r_lim_2_an_allowance_that_closes_on_its_own_fires_the_alerts_its_requests_crossed() -> (
    None
):
    async def run() -> None:
        admitter, now = await _admitter(requests=8), time.time()
        admitter.alerts = Alerts(lambda f: sync_to_async(f, thread_sensitive=False), _no_count)
        workspace = await sync_to_async(Workspace.objects.create)(slug="alerted", name="A")
        rule = BudgetRule("key:1:bot", "daily", 10**12, alerts=(1e-9,), label="key daily")
        hold = Hold("r0", workspace.id, charges([rule], now), WORST, now + 60)
        limits: list[LimitSpec] = []
        first = await admitter.take(limits, 0, "r0", hold, now)
        await admitter.give_back(GiveBack((), "r0", 0, 0, hold, 0, now))  # nothing spent yet
        drawn = [await admitter.take(limits, 0, f"r{i}", replace(hold, request_id=f"r{i}"), now)
                 for i in (1, 2, 3)]  # fmt: skip
        assert first.drawn is None
        assert all(t.drawn is not None for t in drawn)
        for i, one in enumerate(drawn, start=1):
            back = GiveBack((), f"r{i}", 0, 0, replace(hold, request_id=f"r{i}"), 500, now,
                            one.drawn)  # fmt: skip
            await admitter.give_back(back)
        # when it closes with no request awaiting it (its time up, or here the shutdown)
        await admitter.aclose()
        # then the threshold (1,000 micro-dollars) its 1,500 crossed fired, once
        counter = hold.charges[0].counter
        fired = await sync_to_async(list)(BudgetAlert.objects.filter(counter=counter))
        assert [a.threshold for a in fired] == [1e-9]

    asyncio.run(run())


def test_r_lim_2_a_worker_with_allowances_off_sends_every_request_to_redis() -> None:
    async def run() -> None:
        admitter, now = await _admitter(requests=0), time.time()
        taken = [await _take(admitter, f"r{i}", now) for i in range(5)]
        assert all(t.admitted and t.drawn is None for t in taken)
        assert await _counter(admitter, now) == (0, 5 * WORST, 5)

    asyncio.run(run())
