"""A worker's allowance: a share of a budget and of a rate limit that it takes from Redis
in one admission, and then admits its own requests from, in this process, with no round
trip (docs/budgets.md, "Allowances"). Pure: no I/O, `now` passed in; a worker's allowances
on Redis (redis/allowances.py) are opened and closed with its admitter's calls.

Why: a Redis round trip costs a worker on this machine ~150 µs of CPU and wakes Redis on a
CPU the request's own processes need; one for every request kept a budgeted request at
~0.8 of an unbudgeted one's throughput. An allowance takes `ALLOWANCE_REQUESTS` requests'
worth at once: their worst-case cost reserved on every budget counter, and as many
requests on every requests-per-minute limit, by the same scripts and in the same atomic
step as one request's admission. Its requests then settle here; when it closes — once it
has stopped admitting (after `ACCEPT_S`, or used up) and its last request has ended — its
reservation settles to what they cost together (one ledger row a counter, counting its
requests) and the requests it did not admit go back to the limits.

What it guarantees, and what it gives up (docs/budgets.md):
- A budget is never overspent through one: every request it admits fits in what it
  reserved, which Redis reserved within the cap.
- Allowances are taken only far from the caps (`HEADROOM` allowances' worth left), so near
  a cap every request is admitted by Redis itself, exactly (the barrier race). The price:
  while other workers hold allowances, a request may be refused up to `ACCEPT_S` before
  the cap is truly reached — at most one allowance a worker.
- A worker killed with an allowance open: the sweeper charges the whole reservation, as
  for any request whose process died. The limits' requests it did not admit drain away
  within the minute.
- Only keys whose limits are all requests-per-minute and whose counters are all capped
  take allowances: token and concurrency limits, and the counters a route's rate nodes
  read, are admitted per request.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from budgets.rules.holds import Hold, Verdict
from budgets.rules.limits import (
    CheckResult,
    LimitSpec,
    LimitVerdict,
    PlannedCheck,
    RateState,
    drained_level,
    plan_checks,
    rate_headers,
)
from budgets.rules.route_usage import UNCAPPED

ALLOWANCE_REQUESTS = 64  # requests an allowance admits at most (SWITCHYARD_ALLOWANCE_REQUESTS)
ACCEPT_S = 1.0  # an allowance admits requests this long after it opened, then closes
# Allowances are taken only while what is left under every cap and limit covers this many
# more of them: 32 × 64 = 2,048 requests' worth (a limit below 2,048 a minute never does).
HEADROOM = 32

Shape = tuple[tuple[LimitSpec, ...], tuple[tuple[str, int], ...], int]


def shape_of(limits: Sequence[LimitSpec], hold: Hold | None) -> Shape | None:
    """What requests share one allowance (the same limits, counters and caps, the same
    workspace); None for a request that must be admitted alone."""
    if any(s.tokens_per_minute is not None or s.concurrent is not None for s in limits):
        return None  # tokens and leases are given back request by request
    if hold is None:
        return (tuple(limits), (), 0)
    if any(c.cap_micros >= UNCAPPED for c in hold.charges):
        return None  # a route's rate node reads the counter's requests as they are admitted
    return (
        tuple(limits),
        tuple((c.counter, c.cap_micros) for c in hold.charges),
        hold.workspace_id,
    )


@dataclass(frozen=True, slots=True)
class Room:
    """What one admission's reply said was left: requests under the tightest rate limit,
    micro-dollars under the tightest budget (None: none applies)."""

    requests: float | None
    micros: int | None

    def fits(self, requests: int, amount_micros: int) -> bool:
        """Is there room for `HEADROOM` allowances of `requests` requests of `amount_micros`?"""
        if self.requests is not None and self.requests < HEADROOM * requests:
            return False
        return self.micros is None or self.micros >= HEADROOM * requests * amount_micros


def room_after(
    levels: Sequence[float], planned: Sequence[PlannedCheck], budget: Verdict | None
) -> Room:
    """The room an admitted request's reply leaves: `levels` are its limits' levels before
    it (the acquire script's reply), `budget` its reservation's verdict."""
    requests = min(
        (p.limit - level - p.cost for p, level in zip(planned, levels, strict=True)), default=None
    )
    return Room(requests, budget.remaining_micros if budget is not None else None)


@dataclass(slots=True)
class Allowance:
    """One allowance of a worker: what it took, and what its requests have used of it."""

    id: str
    limits: tuple[LimitSpec, ...]
    hold: Hold | None  # its reservation in Redis (None: no budget applies)
    requests: int  # how many it took on each requests-per-minute limit
    opened_at: float
    levels: tuple[float, ...]  # each limit's level before it was taken (headers)
    remaining_micros: int  # under the tightest cap once its reservation counted
    drawn: int = 0  # requests admitted from it
    under_way: int = 0
    left_micros: int = 0  # of its reservation, not held by a request under way or spent
    spent_micros: int = 0
    closing: bool = False  # admits no more
    _checks: list[PlannedCheck] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.left_micros = self.hold.amount_micros if self.hold is not None else 0
        self._checks = plan_checks(self.limits, tokens=0)

    def draw(
        self, hold: Hold | None, now: float
    ) -> tuple[LimitVerdict | None, Verdict | None] | None:
        """Admit one request from it: its verdicts, as Redis would have answered them;
        None when it cannot."""
        amount = hold.amount_micros if hold is not None else 0
        if (
            self.closing
            or self.drawn >= self.requests
            or now >= self.opened_at + ACCEPT_S
            or amount > self.left_micros
            or not self._outlives(hold)
        ):
            return None
        limit = self._limit_verdict(now) if self.limits else None
        self.drawn += 1
        self.under_way += 1
        self.left_micros -= amount
        budget = None
        if hold is not None:
            budget = Verdict(True, self.remaining_micros + self.left_micros)
        return limit, budget

    def returned(self, hold: Hold | None, cost_micros: int) -> bool:
        """A request it admitted has ended, at `cost_micros`; True when the allowance is
        now to close (it admits no more, and that was its last request under way)."""
        amount = hold.amount_micros if hold is not None else 0
        self.under_way -= 1
        self.spent_micros += cost_micros
        self.left_micros += amount - cost_micros  # (less, when a request cost more than its worst)
        return self.closing and self.under_way == 0

    def close(self) -> bool:
        """It admits no more; True when nothing of it is under way (it can close now) —
        once: asked again (its time up after it was used up), or after its last request's
        end closed it, False."""
        first, self.closing = not self.closing, True
        return first and self.under_way == 0

    @property
    def unused(self) -> int:
        """The requests it took on the limits and did not admit: given back at its close."""
        return self.requests - self.drawn

    def _outlives(self, hold: Hold | None) -> bool:
        """Its reservation expires no sooner than the request's would."""
        return hold is None or self.hold is None or hold.expires_at <= self.hold.expires_at

    def _limit_verdict(self, now: float) -> LimitVerdict:
        """The headers the request would have had from Redis: each limit's level is what it
        was before the allowance, plus the requests admitted from it, drained to now."""
        results = [
            CheckResult(
                check,
                True,
                drained_level(
                    RateState(level + self.drawn, self.opened_at), limit=check.limit, now=now
                ),
            )
            for check, level in zip(self._checks, self.levels, strict=True)
        ]
        return LimitVerdict(True, 0, None, rate_headers(results, admitted=True))


def new_id() -> str:
    """An allowance's id: its reservation's and its limits' lease."""
    return f"allowance-{uuid.uuid4().hex}"


def opening(allowance_id: str, hold: Hold | None, requests: int) -> Hold | None:
    """The reservation an allowance of `requests` requests like `hold` asks Redis for: their
    worst case together, expiring `ACCEPT_S` after the request's would (the last request
    it admits may start that much later)."""
    if hold is None:
        return None
    return Hold(
        allowance_id,
        hold.workspace_id,
        hold.charges,
        hold.amount_micros * requests,
        hold.expires_at + ACCEPT_S,
    )
