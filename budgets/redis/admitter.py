"""The admitter on Redis (admitter.py has the protocol): both scripts of an admission in
one round trip, settlements given back in batches, and far from every cap a worker's
allowance (allowance.py).

A lone request's admission goes at once; a busy worker's go together: those asked for in
one turn of the loop in one pipeline, one pipeline out at a time, those asked for
meanwhile together when its replies come. The settlements waiting ride in it, ahead of
the admissions — while other admitted requests are under way, so that more are coming; a
settlement no admission comes for within `SETTLE_BATCH_S` goes with the others of that
wait in a pipeline of their own. The last request under way settles at once instead: on
an idle worker nothing is coming to ride with, and the next request's admission would
carry the settlement's script on its own path (at c1 its pack and script were ~0.1 ms of
the admission's ~0.6; docs/performance.md, "Admissions batched per loop turn"). Written
first on the one connection, it is still counted before that admission.

A request whose client leaves once its admission's calls are out gets nothing, and gives
back what they took when their replies come (`_given_up`), written after them on the line.

Far from every cap and limit, requests are admitted from the worker's allowance instead
(allowance.py): the same two scripts take 64 requests' worth at once, and those requests
touch Redis no more; the allowance settles when it closes.

The pipelines go on the worker's one connection for them (redis/line.py). A Redis round
trip costs ~150 µs of the worker's CPU on this machine even so (the write, the loop's
wake-up, the read), so four calls a request (acquire, reserve, release, settle) would cost
more than the request's routing; this is about one a request under load, and with
allowances about one in thirty.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from budgets.admitter import GiveBack, Meanwhile, Taken
from budgets.alerts import Alerts
from budgets.redis.cluster_line import ClusterLine
from budgets.redis.limits import RedisLimiter, acquired
from budgets.redis.line import GivenUp, RedisLine
from budgets.redis.store import MAX_REBUILDS, REDIS_ERRORS, RedisBudgetStore
from budgets.rules.allowance import (
    ACCEPT_S,
    ALLOWANCE_REQUESTS,
    Allowance,
    Room,
    Shape,
    new_id,
    opening,
    room_after,
    shape_of,
)
from budgets.rules.holds import BudgetStoreUnavailable, Hold, Settled, Verdict
from budgets.rules.limits import LimitSpec

log = logging.getLogger(__name__)
Call = tuple[AsyncScript, tuple[list[str], list[Any]]]  # a script, its keys and arguments
SETTLE_BATCH_S = 0.025  # settlements wait at most this long for company (an admission)
SETTLE_BATCH_MAX = 128
MAX_SHAPES = 10_000  # the rooms remembered for allowances (allowance.py): keys × periods


@dataclass
class RedisAdmitter:
    limiter: RedisLimiter
    budgets: RedisBudgetStore
    line: RedisLine | ClusterLine  # the scripts' calls; the rest (loading them) on redis-py
    alerts: Alerts | None = None  # fired for each settlement
    allowance_requests: int = ALLOWANCE_REQUESTS  # 0: Redis admits every request itself
    _queue: list[tuple[GiveBack, asyncio.Future[Settled | None]]] = field(default_factory=list)
    _flush_timer: asyncio.TimerHandle | None = None
    _under_way: int = 0  # admitted requests not yet given back
    _takes: list[tuple[list[Call], asyncio.Future[list[Any]], GivenUp]] = field(
        default_factory=list
    )
    _takes_out: bool = False  # a pipeline of admissions is out (or its task about to send)
    _sending: set[asyncio.Task[None]] = field(default_factory=set)
    _allowances: dict[Shape, Allowance] = field(default_factory=dict)  # open ones admitting
    _rooms: dict[Shape, Room] = field(default_factory=dict)  # what the last admission left
    _opening: dict[Shape, asyncio.Task[None]] = field(default_factory=dict)

    async def take(
        self,
        limits: Sequence[LimitSpec],
        tokens: int,
        lease: str,
        hold: Hold | None,
        now: float,
        meanwhile: Meanwhile = None,
    ) -> Taken:
        """`meanwhile`, on an idle worker, runs once the calls are written and before their
        replies are awaited: the request's own work, done while Redis answers. A busy
        worker does not run it: there its calls wait for this turn of the loop to end,
        and work done first would only hold up the turn's pipeline."""
        shape = shape_of(limits, hold) if self.allowance_requests else None
        if shape is not None:
            drawn = await self._draw(shape, limits, hold, now)
            if drawn is not None:
                return drawn
        (acquire, _), (reserve, _) = self.limiter.scripts, self.budgets.scripts
        calls: list[Call] = []
        planned: list[Any] = []
        if limits:
            call, planned = self.limiter.acquire_call(limits, tokens=tokens, lease=lease)
            calls.append((acquire, call))
        if hold is not None:
            calls.append((reserve, self.budgets.reserve_call(hold)))
        given_up = partial(self._given_up, limits, tokens, lease, hold, planned)
        replies = await self._round_trip(calls, meanwhile, given_up)
        levels = _levels(replies[0], planned) if limits else []
        limit = acquired(replies.pop(0), planned) if limits else None
        budget = None
        if hold is not None:
            budget = await self._reserved(hold, replies[0])
        undo: list[Call] = []
        if limit is not None and not limit.admitted and budget is not None and budget.admitted:
            undo, budget = self._undo_calls(lease, tokens, (), hold), None
        elif budget is not None and not budget.admitted and limit is not None and limit.admitted:
            undo = self._undo_calls(lease, tokens, limits, None)
        if undo:
            await self._pipelined(undo)
        taken = Taken(limit, budget)
        if taken.admitted:
            self._under_way += 1
            if shape is not None:
                if len(self._rooms) >= MAX_SHAPES:  # (a shape names its period: they pile up)
                    self._rooms.clear()
                self._rooms[shape] = room_after(levels, planned, budget)
        return taken

    async def _draw(
        self, shape: Shape, limits: Sequence[LimitSpec], hold: Hold | None, now: float
    ) -> Taken | None:
        """The request admitted from the worker's allowance of its shape — opened now (one
        opening a shape at a time, the requests meanwhile waiting for it) when the last
        admission left room for it; None: Redis is to admit it alone."""
        drawn = self._draw_now(shape, hold, now)
        if drawn is not None:
            return drawn
        room = self._rooms.get(shape)
        amount = hold.amount_micros if hold is not None else 0
        if room is None or not room.fits(self.allowance_requests, amount):
            return None
        task = self._opening.get(shape)
        if task is None:  # a task: a request whose client leaves does not cancel it
            task = asyncio.get_running_loop().create_task(self._open(shape, limits, hold, now))
            self._opening[shape] = task
            task.add_done_callback(partial(self._opened, shape))
        await asyncio.shield(task)
        return self._draw_now(shape, hold, now)

    def _opened(self, shape: Shape, task: asyncio.Task[None]) -> None:
        self._opening.pop(shape, None)
        if not task.cancelled():
            task.exception()  # (retrieved: its waiters, if any are left, raise it)

    def _draw_now(self, shape: Shape, hold: Hold | None, now: float) -> Taken | None:
        allowance = self._allowances.get(shape)
        if allowance is None:
            return None
        verdicts = allowance.draw(hold, now)
        if verdicts is None:
            self._retire(shape, allowance)
            return None
        return Taken(*verdicts, drawn=allowance)

    async def _open(
        self, shape: Shape, limits: Sequence[LimitSpec], hold: Hold | None, now: float
    ) -> None:
        """Take an allowance like one admission, with the same scripts: `allowance_requests`
        requests on each limit, their worst case reserved on each counter. Refused (the
        room was not there after all), it takes nothing, and requests go to Redis alone
        until an admission leaves room again."""
        count = self.allowance_requests
        lease = new_id()
        reservation = opening(lease, hold, count)
        calls: list[Call] = []
        planned: list[Any] = []
        if limits:
            call, planned = self.limiter.acquire_call(limits, tokens=0, lease=lease, requests=count)
            calls.append((self.limiter.scripts[0], call))
        if reservation is not None:
            calls.append((self.budgets.scripts[0], self.budgets.reserve_call(reservation)))
        replies = await self._round_trip(calls)
        limit = acquired(replies[0], planned) if limits else None
        budget = await self._reserved(reservation, replies[-1]) if reservation else None
        if (limit is None or limit.admitted) and (budget is None or budget.admitted):
            levels = tuple(_levels(replies[0], planned)) if limits else ()
            left = budget.remaining_micros if budget is not None else 0
            allowance = Allowance(lease, tuple(limits), reservation, count, now, levels, left)
            self._allowances[shape] = allowance
            # (what is left after it decides whether the next one may be taken)
            self._rooms[shape] = room_after(levels, planned, budget)
            asyncio.get_running_loop().call_later(ACCEPT_S, self._retire, shape, allowance)
            return
        self._rooms[shape] = Room(0, 0)
        undo: list[Call] = []
        if limit is not None and limit.admitted:
            keys, args = self.limiter.return_call(limits, lease=lease, unused=count)
            undo.append((self.limiter.scripts[1], (keys, args)))
        if budget is not None and budget.admitted and reservation is not None:
            undo.append((self.budgets.scripts[1], self.budgets.cancel_call(reservation)))
        if undo:
            await self._pipelined(undo)

    def _retire(self, shape: Shape, allowance: Allowance) -> None:
        """It admits no more (its time is up, or it cannot admit a request); closed now
        if none of its requests is under way, else when the last one ends."""
        if self._allowances.get(shape) is allowance:
            del self._allowances[shape]
        if allowance.close():
            task = asyncio.get_running_loop().create_task(self._close(allowance))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _close(self, allowance: Allowance) -> Settled | None:
        """Settle an allowance: its reservation becomes what its requests cost (one ledger
        row a counter, counting them), and the requests it did not admit go back."""
        calls: list[Call] = []
        if allowance.unused and allowance.limits:
            keys, args = self.limiter.return_call(
                allowance.limits, lease=allowance.id, unused=allowance.unused
            )
            calls.append((self.limiter.scripts[1], (keys, args)))
        hold = allowance.hold
        if hold is not None and not allowance.drawn:
            calls.append((self.budgets.scripts[1], self.budgets.cancel_call(hold)))
        elif hold is not None:
            call = self.budgets.settle_call(hold, allowance.spent_micros, allowance.drawn)
            calls.append((self.budgets.scripts[1], call))
        if not calls:
            return None
        try:
            replies = await self._pipelined(calls)
        except BudgetStoreUnavailable as error:
            log.error(
                "closing allowance %s failed (%s); its cost goes to the ledger alone",
                allowance.id,
                error,
            )
            if hold is not None and allowance.drawn:
                self.budgets.settled_unreachable(
                    hold, allowance.spent_micros, time.time(), allowance.drawn
                )
            return None
        if hold is None or not allowance.drawn:
            return None
        settled = self.budgets.settled(
            hold, allowance.spent_micros, time.time(), replies[-1], allowance.drawn
        )
        if settled is not None and self.alerts is not None:
            await self.alerts.settled(hold, settled)
        return settled

    async def aclose(self) -> None:
        """Shutdown: every allowance closes (those with requests under way, once the
        requests' own settlements have run: the caller drains those first)."""
        for shape, allowance in list(self._allowances.items()):
            self._retire(shape, allowance)
        while self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

    def _given_up(
        self,
        limits: Sequence[LimitSpec],
        tokens: int,
        lease: str,
        hold: Hold | None,
        planned: list[Any],
        replies: list[Any],
    ) -> None:
        """A request that gave up (its client left) after its admission's calls were
        written gives back what they took, once their replies say what that was — sent
        after them on the line, so Redis runs it after them. Otherwise the reservation
        would stay open until the sweeper charged it in full."""
        taken = limits and _ran(replies[0]) and acquired(replies[0], planned).admitted
        reserved = hold is not None and _ran(replies[-1]) and self.budgets.reserves(replies[-1])
        calls = self._undo_calls(lease, tokens, limits if taken else (), hold if reserved else None)
        if calls:
            task = asyncio.get_running_loop().create_task(self._give_back_for(lease, calls))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    def _undo_calls(
        self, lease: str, tokens: int, limits: Sequence[LimitSpec], hold: Hold | None
    ) -> list[Call]:
        """The calls that give back, unused, the `limits` an admission took and the
        reservation `hold` it opened: a request one of them refused after the other had
        admitted it, or one whose client left."""
        calls: list[Call] = []
        if limits:
            keys, args = self.limiter.release_call(
                limits, lease=lease, tokens_reserved=tokens, tokens_used=0
            )
            if len(keys) > 1:  # (a requests-per-minute limit alone has nothing to give back)
                calls.append((self.limiter.scripts[1], (keys, args)))
        if hold is not None:
            calls.append((self.budgets.scripts[1], self.budgets.cancel_call(hold)))
        return calls

    async def _give_back_for(self, lease: str, calls: list[Call]) -> None:
        try:
            await self._pipelined(calls)
        except BudgetStoreUnavailable as error:
            log.error(
                "giving back request %s's admission failed (%s); the sweeper will", lease, error
            )

    async def _reserved(self, hold: Hold, reply: Any) -> Verdict:
        """The reservation's verdict. Counters Redis did not hold (a new period, a flush)
        are rebuilt from the ledger and the reservation asked for again — on the line,
        with the others asked for meanwhile: a burst at a period's start retries ~100
        reservations a worker at once, and through redis-py's pool each wanted a
        connection of its own (a loaded machine timed some out connecting, and refused
        402s as 503s)."""
        reserve, _settle = self.budgets.scripts
        for _ in range(MAX_REBUILDS):
            verdict = await self.budgets.reserved(hold, reply)
            if verdict is not None:
                return verdict
            (reply,) = await self._round_trip([(reserve, self.budgets.reserve_call(hold))])
        raise BudgetStoreUnavailable("budget counters keep disappearing from Redis")

    async def _round_trip(
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
            replies = await self._pipelined(calls, meanwhile, given_up)
        finally:
            self._send_next()
        return replies

    def _send_next(self) -> None:
        """The admissions waiting go now, in a task, with the settlements waiting; none
        waiting, the line is free."""
        self._takes_out = bool(self._takes)
        if self._takes_out:
            task = asyncio.get_running_loop().create_task(self._send_takes())
            self._sending.add(task)  # held until done: the loop keeps only a weak reference
            task.add_done_callback(self._sending.discard)

    async def _send_takes(self) -> None:
        batch, self._takes = self._takes, []
        backs = self._waiting_backs()
        settling, releases = self._settle_calls(backs)
        try:
            replies = await self._pipelined(
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

    async def give_back(self, back: GiveBack) -> Settled | None:
        if back.drawn is not None:  # settled here; the allowance settles in Redis
            if back.drawn.returned(back.hold, back.cost_micros):
                return await self._close(back.drawn)
            return None
        settled = await self._given_back(back)
        if settled is not None and back.hold is not None and self.alerts is not None:
            await self.alerts.settled(back.hold, settled)
        return settled

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
            task = asyncio.get_running_loop().create_task(self._flush_all())
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _flush_all(self) -> None:
        while self._queue:
            await self._flush()

    async def _flush(self) -> None:
        backs = self._waiting_backs()
        calls, releases = self._settle_calls(backs)
        try:
            replies = await self._pipelined(calls)
        except Exception as failure:  # noqa: BLE001 — every request waiting must hear of it
            self._settlements_failed(backs, failure)
            return
        self._settle_results(backs, releases, replies)

    def _settlements_failed(
        self, backs: Sequence[tuple[GiveBack, asyncio.Future[Settled | None]]], failure: Exception
    ) -> None:
        """Settlements whose pipeline failed: their costs still reach the ledger when Redis
        could not be reached (the store's `settled_unreachable`), and each request hears."""
        for back, done in backs:
            if back.hold is not None and isinstance(failure, BudgetStoreUnavailable):
                self.budgets.settled_unreachable(back.hold, back.cost_micros, back.now)
            if not done.done():
                done.set_exception(failure)

    def _waiting_backs(self) -> list[tuple[GiveBack, asyncio.Future[Settled | None]]]:
        backs, self._queue = self._queue[:SETTLE_BATCH_MAX], self._queue[SETTLE_BATCH_MAX:]
        return backs

    def _settle_calls(
        self, backs: Sequence[tuple[GiveBack, asyncio.Future[Settled | None]]]
    ) -> tuple[list[Call], list[bool]]:
        """The script calls that give `backs` back, and for each whether it has limits to
        release (a requests-per-minute limit alone has nothing to give back)."""
        _acquire, release = self.limiter.scripts
        _reserve, settle = self.budgets.scripts
        calls: list[Call] = []
        releases = []
        for back, _ in backs:
            keys, args = self.limiter.release_call(
                back.limits,
                lease=back.lease,
                tokens_reserved=back.tokens_reserved,
                tokens_used=back.tokens_used,
            )
            releases.append(len(keys) > 1)
            if releases[-1]:
                calls.append((release, (keys, args)))
            if back.hold is not None:
                calls.append((settle, self.budgets.settle_call(back.hold, back.cost_micros)))
        return calls, releases

    def _settle_results(
        self,
        backs: Sequence[tuple[GiveBack, asyncio.Future[Settled | None]]],
        releases: Sequence[bool],
        replies: Sequence[Any],
    ) -> None:
        answers = iter(replies)
        for (back, done), released in zip(backs, releases, strict=True):
            if released:
                next(answers)
            settled = None
            if back.hold is not None:
                settled = self.budgets.settled(back.hold, back.cost_micros, back.now, next(answers))
            if not done.done():
                done.set_result(settled)

    async def _pipelined(
        self, calls: Sequence[Call], meanwhile: Meanwhile = None, given_up: GivenUp = None
    ) -> list[Any]:
        """Each script call's reply, all in one round trip. By sha, not through redis-py's
        Script objects, which would ask Redis whether the scripts exist on every pipeline
        (a second round trip). A Redis that lost the scripts (a restart) gets them again,
        and only the calls it refused for that run again: the others have run."""
        replies = await self._send(calls, meanwhile, given_up)
        missing = [i for i, reply in enumerate(replies) if _no_script(reply)]
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
        commands = [
            ("EVALSHA", script.sha, len(keys), *keys, *args) for script, (keys, args) in calls
        ]
        replies: list[Any] = await self._guarded(self.line.call(commands, meanwhile, given_up))
        return replies

    async def _guarded(self, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except REDIS_ERRORS as error:
            raise BudgetStoreUnavailable(str(error)) from error


def _levels(reply: Sequence[Any], planned: Sequence[Any]) -> list[float]:
    """Each limit's level before the admission, from the acquire script's reply."""
    return [float(reply[2 + 2 * i]) for i in range(len(planned))]


def _ran(reply: Any) -> bool:
    """A script's reply, not an error in its place (NOSCRIPT: it did not run)."""
    return not isinstance(reply, Exception)


def _no_script(reply: Any) -> bool:
    """Redis no longer holds the script (it restarted, or was flushed)."""
    return isinstance(reply, ResponseError) and str(reply).startswith("NOSCRIPT")
