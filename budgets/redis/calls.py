"""The script calls of the Redis admitter (redis/admitter.py), each a script with its keys
and arguments (the stores build those: redis/limits.py, redis/store.py), and the reading
of their replies.

An admission is acquire (when limits apply), then reserve (when a budget does), in one
round trip; the calls that give back are release and settle (with "cancel": a reservation
given back unused). A worker's allowance (allowance.py) is taken with the same two calls
for many requests, and settled with the same two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from budgets.admitter import GiveBack
from budgets.redis.limits import RedisLimiter, acquired
from budgets.redis.store import RedisBudgetStore
from budgets.rules.allowance import Allowance
from budgets.rules.holds import Hold
from budgets.rules.limits import LimitSpec, LimitVerdict, PlannedCheck

Call = tuple[AsyncScript, tuple[list[str], list[Any]]]  # a script, its keys and arguments
NO_CHECKS: Sequence[PlannedCheck] = ()


class Acquired(NamedTuple):
    """An acquire script's reply, read: the limits' verdict, and each limit's level before
    the admission (the room it leaves decides on allowances)."""

    verdict: LimitVerdict
    levels: list[float]


class Admission(NamedTuple):
    """One admission's calls, acquire then reserve (either absent when no limit, or no
    budget, applies), and what they ask for."""

    calls: list[Call]
    limits: Sequence[LimitSpec]
    planned: Sequence[PlannedCheck]  # the checks the acquire reply answers, in its order
    hold: Hold | None  # the reservation asked for
    lease: str
    tokens: int

    def acquired(self, replies: Sequence[Any]) -> Acquired | None:
        """The acquire script's reply among `replies`, read (None: no limit applies)."""
        if not self.limits:
            return None
        reply, planned = replies[0], self.planned
        levels = [float(reply[2 + 2 * i]) for i in range(len(planned))]
        return Acquired(acquired(reply, planned), levels)

    def reserve_reply(self, replies: Sequence[Any]) -> Any:
        """The reserve script's reply among `replies`, as it came: its verdict may need
        the counters rebuilt first (the admitter's `reserved`). None: no budget applies."""
        return replies[-1] if self.hold is not None else None


class Calls:
    """Builds the calls on the stores' registered scripts (a script Redis lost is loaded
    again under the same object: the calls built meanwhile name its `sha` when sent)."""

    __slots__ = ("_acquire", "_release", "_reserve", "_settle", "budgets", "limiter")

    def __init__(self, limiter: RedisLimiter, budgets: RedisBudgetStore) -> None:
        self.limiter, self.budgets = limiter, budgets
        self._acquire, self._release = limiter.scripts
        self._reserve, self._settle = budgets.scripts

    def admission(
        self,
        limits: Sequence[LimitSpec],
        tokens: int,
        lease: str,
        hold: Hold | None,
        requests: int = 1,
    ) -> Admission:
        """A request's admission, or (`requests` > 1) an allowance's."""
        calls: list[Call] = []
        planned = NO_CHECKS
        if limits:
            call, planned = self.limiter.acquire_call(
                limits, tokens=tokens, lease=lease, requests=requests
            )
            calls.append((self._acquire, call))
        if hold is not None:
            calls.append(self.reserve(hold))
        return Admission(calls, limits, planned, hold, lease, tokens)

    def reserve(self, hold: Hold) -> Call:
        return self._reserve, self.budgets.reserve_call(hold)

    def release(
        self, limits: Sequence[LimitSpec], lease: str, tokens_reserved: int, tokens_used: int
    ) -> Call | None:
        """None: nothing to give back (requests-per-minute limits alone)."""
        keys, args = self.limiter.release_call(
            limits, lease=lease, tokens_reserved=tokens_reserved, tokens_used=tokens_used
        )
        return (self._release, (keys, args)) if len(keys) > 1 else None

    def unused(self, limits: Sequence[LimitSpec], lease: str, requests: int) -> Call:
        """The release script's call that gives back the `requests` an allowance took on
        its limits and did not admit."""
        return self._release, self.limiter.return_call(limits, lease=lease, unused=requests)

    def cancel(self, hold: Hold) -> Call:
        """The settle script's call that gives a reservation back unspent."""
        return self._settle, self.budgets.cancel_call(hold)

    def settle(self, hold: Hold, cost_micros: int, requests: int = 1) -> Call:
        return self._settle, self.budgets.settle_call(hold, cost_micros, requests)

    def undo(
        self, admission: Admission, *, limits: bool = False, reservation: bool = False
    ) -> list[Call]:
        """The calls that give back, unused, the limits a request's admission took
        (`limits`) and the reservation it opened (`reservation`): a request one of them
        refused after the other had admitted it, or one whose client left."""
        calls: list[Call] = []
        if limits and admission.limits:
            call = self.release(admission.limits, admission.lease, admission.tokens, 0)
            if call is not None:
                calls.append(call)
        if reservation and admission.hold is not None:
            calls.append(self.cancel(admission.hold))
        return calls

    def given_up(self, admission: Admission, replies: Sequence[Any]) -> list[Call]:
        """The calls that give back what a request's admission took, read from its replies
        as they came: an error in a reply's place (NOSCRIPT) took nothing."""
        limits = (
            bool(admission.limits)
            and ran(replies[0])
            and acquired(replies[0], admission.planned).admitted
        )
        reserved = (
            admission.hold is not None and ran(replies[-1]) and self.budgets.reserves(replies[-1])
        )
        return self.undo(admission, limits=limits, reservation=reserved)

    def closing(self, allowance: Allowance) -> list[Call]:
        """The calls that settle an allowance: its reservation becomes what its requests
        cost (given back unspent when it admitted none), and the requests it did not
        admit go back to the limits."""
        calls: list[Call] = []
        if allowance.unused and allowance.limits:
            calls.append(self.unused(allowance.limits, allowance.id, allowance.unused))
        hold = allowance.hold
        if hold is not None and not allowance.drawn:
            calls.append(self.cancel(hold))
        elif hold is not None:
            calls.append(self.settle(hold, allowance.spent_micros, allowance.drawn))
        return calls

    def settlements(
        self, backs: Sequence[tuple[GiveBack, object]]
    ) -> tuple[list[Call], list[bool]]:
        """The calls that give `backs` (each with its waiter) back, and for each whether
        one of them is its release."""
        calls: list[Call] = []
        releases = []
        for back, _ in backs:
            release = self.release(back.limits, back.lease, back.tokens_reserved, back.tokens_used)
            releases.append(release is not None)
            if release is not None:
                calls.append(release)
            if back.hold is not None:
                calls.append(self.settle(back.hold, back.cost_micros))
        return calls, releases


def commands(calls: Sequence[Call]) -> list[tuple[Any, ...]]:
    """The calls as commands for a pipeline: by sha, not through redis-py's Script objects,
    which would ask Redis whether the scripts exist on every pipeline (a round trip)."""
    return [("EVALSHA", script.sha, len(keys), *keys, *args) for script, (keys, args) in calls]


def ran(reply: Any) -> bool:
    """A script's reply, not an error in its place (NOSCRIPT: it did not run)."""
    return not isinstance(reply, Exception)


def no_script(reply: Any) -> bool:
    """Redis no longer holds the script (it restarted, or was flushed): its NOSCRIPT
    reply, which redis-py's parser reads as a `NoScriptError`."""
    return isinstance(reply, NoScriptError)
