"""A worker's allowances on Redis (allowance.py has their arithmetic): those open, by shape,
admitting its requests with no round trip; opened, one a shape at a time, when the last
admission of that shape left room for `HEADROOM` more of them; closed, once they admit
no more and their last request has ended, by settling their reservation and giving back
the requests they did not admit. Their calls (redis/calls.py) go in the admitter's
pipelines (redis/admitter.py), with its admissions.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Sequence
from functools import partial
from typing import Any, Protocol

from budgets.admitter import Taken
from budgets.alerts import Alerts
from budgets.redis.calls import Call, Calls
from budgets.rules.allowance import ACCEPT_S, Allowance, Room, Shape, new_id, opening, room_after
from budgets.rules.holds import BudgetStoreUnavailable, Hold, Settled, Verdict
from budgets.rules.limits import LimitSpec

log = logging.getLogger(__name__)


class Admissions(Protocol):
    """What allowances use of the admitter: its round trips (batched with its admissions),
    its verdict of a reservation (rebuilding counters Redis lost), its background tasks
    (awaited at shutdown), and its alerts (fired for each settlement)."""

    alerts: Alerts | None

    async def round_trip(self, calls: list[Call]) -> list[Any]: ...

    async def pipelined(self, calls: Sequence[Call]) -> list[Any]: ...

    async def reserved(self, hold: Hold, reply: Any) -> Verdict: ...

    def spawn(self, work: Coroutine[Any, Any, object]) -> None: ...


class Allowances:
    """`rooms`: what the last admission of each shape left (the admitter's, and an
    opening's)."""

    __slots__ = ("_admitting", "_calls", "_opening", "admitter", "rooms")

    def __init__(self, admitter: Admissions, calls: Calls, rooms: dict[Shape, Room]) -> None:
        self.admitter, self._calls, self.rooms = admitter, calls, rooms
        self._admitting: dict[Shape, Allowance] = {}  # those admitting
        self._opening: dict[Shape, asyncio.Task[None]] = {}

    async def draw(
        self,
        shape: Shape,
        limits: Sequence[LimitSpec],
        hold: Hold | None,
        now: float,
        requests: int,
    ) -> Taken | None:
        """The request admitted from the allowance of its shape — opened now, for
        `requests` requests (the requests meanwhile waiting for it), when the last
        admission left room for it; None: Redis is to admit it alone."""
        drawn = self._draw_now(shape, hold, now)
        if drawn is not None:
            return drawn
        room = self.rooms.get(shape)
        amount = hold.amount_micros if hold is not None else 0
        if room is None or not room.fits(requests, amount):
            return None
        task = self._opening.get(shape)
        if task is None:  # a task: a request whose client leaves does not cancel it
            work = self._open_one(shape, limits, hold, now, requests)
            task = asyncio.get_running_loop().create_task(work)
            self._opening[shape] = task
            task.add_done_callback(partial(self._opening_done, shape))
        await asyncio.shield(task)
        return self._draw_now(shape, hold, now)

    def _opening_done(self, shape: Shape, task: asyncio.Task[None]) -> None:
        self._opening.pop(shape, None)
        if not task.cancelled():
            task.exception()  # (retrieved: its waiters, if any are left, raise it)

    def _draw_now(self, shape: Shape, hold: Hold | None, now: float) -> Taken | None:
        allowance = self._admitting.get(shape)
        if allowance is None:
            return None
        verdicts = allowance.draw(hold, now)
        if verdicts is None:
            self.retire(shape, allowance)
            return None
        return Taken(*verdicts, drawn=allowance)

    async def _open_one(
        self,
        shape: Shape,
        limits: Sequence[LimitSpec],
        hold: Hold | None,
        now: float,
        count: int,
    ) -> None:
        """Take an allowance like one admission, with the same scripts: `count` requests
        on each limit, their worst case reserved on each counter. Refused (the room was
        not there after all), it takes nothing, and requests go to Redis alone until an
        admission leaves room again."""
        lease = new_id()
        reservation = opening(lease, hold, count)
        admission = self._calls.admission(limits, 0, lease, reservation, requests=count)
        replies = await self.admitter.round_trip(admission.calls)
        acquired = admission.acquired(replies)
        limit = acquired.verdict if acquired is not None else None
        budget = None
        if reservation is not None:
            budget = await self.admitter.reserved(reservation, admission.reserve_reply(replies))
        if (limit is None or limit.admitted) and (budget is None or budget.admitted):
            levels = tuple(acquired.levels) if acquired is not None else ()
            left = budget.remaining_micros if budget is not None else 0
            allowance = Allowance(lease, tuple(limits), reservation, count, now, levels, left)
            self._admitting[shape] = allowance
            # (what is left after it decides whether the next one may be taken)
            self.rooms[shape] = room_after(levels, admission.planned, budget)
            asyncio.get_running_loop().call_later(ACCEPT_S, self.retire, shape, allowance)
            return
        self.rooms[shape] = Room(0, 0)
        undo: list[Call] = []
        if limit is not None and limit.admitted:
            undo.append(self._calls.unused(limits, lease, count))
        if budget is not None and budget.admitted and reservation is not None:
            undo.append(self._calls.cancel(reservation))
        if undo:
            await self.admitter.pipelined(undo)

    def retire(self, shape: Shape, allowance: Allowance) -> None:
        """It admits no more (its time is up, or it cannot admit a request); closed now
        if none of its requests is under way, else when the last one ends."""
        if self._admitting.get(shape) is allowance:
            del self._admitting[shape]
        if allowance.close():
            self.admitter.spawn(self.close(allowance))

    def retire_all(self) -> None:
        """Every open allowance admits no more (a shutdown)."""
        for shape, allowance in list(self._admitting.items()):
            self.retire(shape, allowance)

    async def close(self, allowance: Allowance) -> Settled | None:
        """Settle an allowance: its reservation becomes what its requests cost (one ledger
        row a counter, counting them), and the requests it did not admit go back."""
        calls = self._calls.closing(allowance)
        if not calls:
            return None
        budgets, hold = self._calls.budgets, allowance.hold
        try:
            replies = await self.admitter.pipelined(calls)
        except BudgetStoreUnavailable as error:
            log.error(
                "closing allowance %s failed (%s); its cost goes to the ledger alone",
                allowance.id,
                error,
            )
            if hold is not None and allowance.drawn:
                budgets.settled_unreachable(
                    hold, allowance.spent_micros, time.time(), allowance.drawn
                )
            return None
        if hold is None or not allowance.drawn:
            return None
        settled = budgets.settled(  # (the settle call is the last of `closing`)
            hold, allowance.spent_micros, time.time(), replies[-1], allowance.drawn
        )
        alerts = self.admitter.alerts
        if settled is not None and alerts is not None:
            await alerts.settled(hold, settled)
        return settled
