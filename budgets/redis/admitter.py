"""The admitter on Redis (admitter.py has the protocol): both scripts of an admission in
one round trip (their calls and replies: redis/calls.py), settlements given back in
batches, and far from every cap a worker's allowance (redis/allowances.py).

A lone request's admission goes at once; a busy worker's go together: those asked for in
one turn of the loop in one pipeline, one pipeline out at a time, those asked for
meanwhile together when its replies come. The settlements waiting ride in it, ahead of
the admissions — while other admitted requests are under way, so that more are coming; a
settlement no admission comes for within `SETTLE_BATCH_S` goes with the others of that
wait in a pipeline of their own. The last request under way settles at once instead: on
an idle worker nothing is coming to ride with, and the next request's admission would
carry the settlement's script on its own path (at c1 its pack and script were ~0.1 ms of
the admission's ~0.6; docs/performance.md, "Admissions batched per loop turn"). An
admission asked for while it is out goes at once, on another pooled connection, and may
reach Redis before it.

A request whose client leaves once its admission's calls are out gets nothing, and gives
back what they took when their replies come (`_given_up`), in a pipeline sent after them.

Each pipeline is one redis-py pipeline on the worker's shared client (redis/pipeline.py).
A Redis round trip through it costs the worker ~450 µs of CPU on this machine (the pool,
the encoding, the write, the loop's wake-up, the read; docs/performance.md), so four
calls a request (acquire, reserve, release, settle) would cost more than the request's
routing; this is about one a request under load, and with allowances about one in thirty.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from budgets.admitter import GiveBack, Meanwhile, Taken
from budgets.alerts import Alerts
from budgets.redis import pipeline
from budgets.redis.allowances import Allowances
from budgets.redis.calls import Admission, Call, Calls, commands, no_script
from budgets.redis.limits import RedisLimiter
from budgets.redis.pipeline import GivenUp
from budgets.redis.store import MAX_REBUILDS, REDIS_ERRORS, AnyRedis, RedisBudgetStore
from budgets.rules.allowance import ALLOWANCE_REQUESTS, Room, Shape, room_after, shape_of
from budgets.rules.holds import BudgetStoreUnavailable, Hold, Settled, Verdict
from budgets.rules.limits import LimitSpec

log = logging.getLogger(__name__)
SETTLE_BATCH_S = 0.025  # settlements wait at most this long for company (an admission)
SETTLE_BATCH_MAX = 128
MAX_SHAPES = 10_000  # the rooms remembered for allowances (allowance.py): keys × periods

Waiting = tuple[GiveBack, asyncio.Future[Settled | None]]  # a give-back and its request


@dataclass
class RedisAdmitter:
    limiter: RedisLimiter
    budgets: RedisBudgetStore
    client: AnyRedis  # the worker's shared client (redis/store.py), the stores' own
    alerts: Alerts | None = None  # fired for each settlement
    allowance_requests: int = ALLOWANCE_REQUESTS  # 0: Redis admits every request itself
    _queue: list[Waiting] = field(default_factory=list)
    _flush_timer: asyncio.TimerHandle | None = None
    _under_way: int = 0  # admitted requests not yet given back
    _takes: list[tuple[list[Call], asyncio.Future[list[Any]], GivenUp]] = field(
        default_factory=list
    )
    _takes_out: bool = False  # a pipeline of admissions is out (or its task about to send)
    _sending: set[asyncio.Task[Any]] = field(default_factory=set)
    # What the last admission of each shape left: whether an allowance may be opened.
    _rooms: dict[Shape, Room] = field(default_factory=dict)
    calls: Calls = field(init=False)
    _allowances: Allowances = field(init=False)

    def __post_init__(self) -> None:
        self.calls = Calls(self.limiter, self.budgets)
        self._allowances = Allowances(self, self.calls, self._rooms)

    async def take(
        self,
        limits: Sequence[LimitSpec],
        tokens: int,
        lease: str,
        hold: Hold | None,
        now: float,
        meanwhile: Meanwhile = None,
    ) -> Taken:
        """`meanwhile`, on an idle worker, runs once the calls are handed to their pipeline
        and before their replies are awaited (redis/pipeline.py `send`): the request's own
        work, done while Redis answers. A busy worker does not run it: there its calls
        wait for this turn of the loop to end, and work done first would only hold up the
        turn's pipeline."""
        requests = self.allowance_requests
        shape = shape_of(limits, hold) if requests else None
        if shape is not None:
            drawn = await self._allowances.draw(shape, limits, hold, now, requests)
            if drawn is not None:
                return drawn
        admission = self.calls.admission(limits, tokens, lease, hold)
        given_up = partial(self._given_up, admission)
        replies = await self.round_trip(admission.calls, meanwhile, given_up)
        acquired = admission.acquired(replies)
        limit = acquired.verdict if acquired is not None else None
        budget = None
        if hold is not None:
            budget = await self.reserved(hold, admission.reserve_reply(replies))
        undo = None
        if limit is not None and not limit.admitted and budget is not None and budget.admitted:
            undo, budget = self.calls.undo(admission, reservation=True), None
        elif budget is not None and not budget.admitted and limit is not None and limit.admitted:
            undo = self.calls.undo(admission, limits=True)
        if undo:
            await self.pipelined(undo)
        taken = Taken(limit, budget)
        if taken.admitted:
            self._under_way += 1
            if shape is not None:
                if len(self._rooms) >= MAX_SHAPES:  # (a shape names its period: they pile up)
                    self._rooms.clear()
                levels = acquired.levels if acquired is not None else ()
                self._rooms[shape] = room_after(levels, admission.planned, budget)
        return taken

    async def give_back(self, back: GiveBack) -> Settled | None:
        if back.drawn is not None:  # settled here; the allowance settles in Redis
            if back.drawn.returned(back.hold, back.cost_micros):
                return await self._allowances.close(back.drawn)
            return None
        settled = await self._given_back(back)
        if settled is not None and back.hold is not None and self.alerts is not None:
            await self.alerts.settled(back.hold, settled)
        return settled

    async def aclose(self) -> None:
        """Shutdown: every allowance closes (those with requests under way, once the
        requests' own settlements have run: the caller drains those first)."""
        self._allowances.retire_all()
        while self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

    def spawn(self, work: Coroutine[Any, Any, object]) -> None:
        """`work` in a task, held until done (the loop keeps only a weak reference), and
        awaited at shutdown."""
        task = asyncio.get_running_loop().create_task(work)
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def _given_up(self, admission: Admission, replies: list[Any]) -> None:
        """A request that gave up (its client left) after its admission's calls were
        handed to their pipeline gives back what they took, once their replies say what
        that was — sent when those replies have come, so Redis runs it after them.
        Otherwise the reservation would stay open until the sweeper charged it in full."""
        calls = self.calls.given_up(admission, replies)
        if calls:
            self.spawn(self._give_back_for(admission.lease, calls))

    async def _give_back_for(self, lease: str, calls: list[Call]) -> None:
        try:
            await self.pipelined(calls)
        except BudgetStoreUnavailable as error:
            log.error(
                "giving back request %s's admission failed (%s); the sweeper will", lease, error
            )

    async def reserved(self, hold: Hold, reply: Any) -> Verdict:
        """The reservation's verdict. Counters Redis did not hold (a new period, a flush)
        are rebuilt from the ledger and the reservation asked for again — in the turn's
        pipeline, with the others asked for meanwhile: a burst at a period's start retries
        ~100 reservations a worker at once, and each asked for alone wanted a pooled
        connection of its own (a loaded machine timed some out connecting, and refused
        402s as 503s)."""
        for _ in range(MAX_REBUILDS):
            verdict = await self.budgets.reserved(hold, reply)
            if verdict is not None:
                return verdict
            (reply,) = await self.round_trip([self.calls.reserve(hold)])
        raise BudgetStoreUnavailable("budget counters keep disappearing from Redis")

    async def round_trip(
        self, calls: list[Call], meanwhile: Meanwhile = None, given_up: GivenUp = None
    ) -> list[Any]:
        """The replies to `calls`. On an idle worker (no other request under way, nothing
        out, no settlement waiting to ride) they go at once, from the caller's own task: no
        task to start, no turn of the loop to wait for (two turns and a task: 35–65 µs of
        a lone request's wait here; docs/performance.md, "Admissions batched per loop
        turn"). Otherwise one pipeline of admissions is out at a time: `calls` go with the
        other admissions asked for in this turn of the loop, or while one is out, with every
        one asked for until its replies come — so a busy worker's admissions share one
        write and one wake-up of Redis (each costs the worker ~100 µs of CPU on this
        machine, most of a budgeted request's extra at c16)."""
        if self._under_way or self._takes_out or self._queue:
            reply: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
            self._takes.append((calls, reply, given_up))
            if not self._takes_out:
                self._send_next()  # (its task runs once this turn is over)
            return await reply
        self._takes_out = True
        try:
            replies = await self.pipelined(calls, meanwhile, given_up)
        finally:
            self._send_next()
        return replies

    def _send_next(self) -> None:
        """The admissions waiting go now, in a task, with the settlements waiting; none
        waiting, the next admission may go at once."""
        self._takes_out = bool(self._takes)
        if self._takes_out:
            self.spawn(self._send_takes())

    async def _send_takes(self) -> None:
        batch, self._takes = self._takes, []
        backs = self._waiting_backs()
        settling, releases = self.calls.settlements(backs)
        try:
            replies = await self.pipelined(
                [*settling, *(call for calls, _, _ in batch for call in calls)]
            )
        except Exception as failure:  # noqa: BLE001 — every request waiting must hear of it
            for _, reply, _ in batch:
                if not reply.done():  # (its request was cancelled meanwhile)
                    reply.set_exception(failure)
            self._settlements_failed(backs, failure)
            return
        finally:
            self._send_next()
        self._settle_results(backs, releases, replies[: len(settling)])
        start = len(settling)
        for calls, reply, given_up in batch:
            got = replies[start : start + len(calls)]
            if not reply.done():
                reply.set_result(got)
            elif reply.cancelled() and given_up is not None:  # its request gave up
                asyncio.get_running_loop().call_soon(given_up, got)  # (the rest get theirs first)
            start += len(calls)

    async def _given_back(self, back: GiveBack) -> Settled | None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Settled | None] = loop.create_future()
        self._queue.append((back, done))
        self._under_way = max(self._under_way - 1, 0)
        if len(self._queue) >= SETTLE_BATCH_MAX or not self._under_way:
            # (nothing under way: no admission is coming to ride with, so it goes now)
            await self._flush()
        elif self._flush_timer is None:  # a timer, not a task: most never need to flush
            self._flush_timer = loop.call_later(SETTLE_BATCH_S, self._flush_due)
        return await done

    def _flush_due(self) -> None:
        self._flush_timer = None
        if self._queue:  # (empty when admissions took them along meanwhile)
            self.spawn(self._flush_all())

    async def _flush_all(self) -> None:
        while self._queue:
            await self._flush()

    async def _flush(self) -> None:
        backs = self._waiting_backs()
        calls, releases = self.calls.settlements(backs)
        try:
            replies = await self.pipelined(calls)
        except Exception as failure:  # noqa: BLE001 — every request waiting must hear of it
            self._settlements_failed(backs, failure)
            return
        self._settle_results(backs, releases, replies)

    def _settlements_failed(self, backs: Sequence[Waiting], failure: Exception) -> None:
        """Settlements whose pipeline failed: their costs still reach the ledger when Redis
        could not be reached (the store's `settled_unreachable`), and each request hears."""
        for back, done in backs:
            if back.hold is not None and isinstance(failure, BudgetStoreUnavailable):
                self.budgets.settled_unreachable(back.hold, back.cost_micros, back.now)
            if not done.done():
                done.set_exception(failure)

    def _waiting_backs(self) -> list[Waiting]:
        backs, self._queue = self._queue[:SETTLE_BATCH_MAX], self._queue[SETTLE_BATCH_MAX:]
        return backs

    def _settle_results(
        self, backs: Sequence[Waiting], releases: Sequence[bool], replies: Sequence[Any]
    ) -> None:
        """Each give-back's request hears its settlement, from its calls' replies in their
        order: its release's, when it had one, then its settle script's."""
        answers = iter(replies)
        for (back, done), released in zip(backs, releases, strict=True):
            if released:
                next(answers)
            settled = None
            if back.hold is not None:
                settled = self.budgets.settled(back.hold, back.cost_micros, back.now, next(answers))
            if not done.done():
                done.set_result(settled)

    async def pipelined(
        self, calls: Sequence[Call], meanwhile: Meanwhile = None, given_up: GivenUp = None
    ) -> list[Any]:
        """Each script call's reply, all in one round trip. A Redis that lost the scripts (a
        restart) gets them again, and only the calls it refused for that run again: the
        others have run."""
        replies = await self._send(calls, meanwhile, given_up)
        missing = [i for i, reply in enumerate(replies) if no_script(reply)]
        if missing:
            for script in {calls[i][0] for i in missing}:
                script.sha = await self._guarded(self.budgets.client.script_load(script.script))
            for i, reply in zip(
                missing, await self._send([calls[i] for i in missing]), strict=True
            ):
                replies[i] = reply
        failed = next((r for r in replies if isinstance(r, Exception)), None)
        if failed is not None:
            raise BudgetStoreUnavailable(str(failed))
        return replies

    async def _send(
        self, calls: Sequence[Call], meanwhile: Meanwhile = None, given_up: GivenUp = None
    ) -> list[Any]:
        call = pipeline.send(self.client, commands(calls), meanwhile, given_up)
        replies: list[Any] = await self._guarded(call)
        return replies

    async def _guarded(self, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except REDIS_ERRORS as error:
            raise BudgetStoreUnavailable(str(error)) from error
