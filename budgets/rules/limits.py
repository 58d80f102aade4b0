"""Rate limits as arithmetic (SPEC R-LIM-1, D-29): requests and tokens per minute by GCRA,
concurrent requests by expiring leases, all-or-nothing across every scope of a request, and
the verdict with its OpenAI-style headers. No I/O and no clock: the caller passes `now`
(epoch seconds) and the state; the stores (limit_store.py, redis/limits.py) keep it.

GCRA (the generic cell rate algorithm) with an emission interval T = 60 s / limit and a
burst of the whole minute's allowance: a request of cost c is admitted when its theoretical
arrival time TAT' = max(TAT, now) + c·T is at most 60 s ahead of now. The state is kept as
the equivalent bucket level (TAT − at) / T, in cost units, with the time `at` it was
measured, rather than as the TAT itself: a burst at one instant then adds whole numbers, so
exactly `limit` fit, where TATs in epoch seconds drift by float rounding at every request.
The level drains at `limit` units per minute; admitted ⇔ level + c ≤ limit (+ LEVEL_SLACK).

Over any interval of W seconds GCRA admits at most limit + W/T of cost (the burst plus what
drained meanwhile): a full burst at t and the refill after it can put up to 2·limit − 1
requests in one sliding 60 s window. That is the token-bucket reading of "per minute"
OpenAI's own headers describe (`reset` = the time until the bucket is full again).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

WINDOW_S = 60.0  # the "per minute" of every rate limit
# A concurrency slot frees when any request of the scope ends, which takes seconds; the
# earliest lease expiry (minutes away) would overstate the wait.
CONCURRENCY_RETRY_AFTER_S = 1
# A cost above the limit never fits (max_tokens above the scope's tokens per minute): no
# wait is accurate, so the whole window, as D-27 answers when it cannot tell.
NEVER_FITS_RETRY_AFTER_S = 60
# Float noise in a drained level (5.000000000000001) must not refuse a request that fits;
# a millionth of a request or token is early by a microsecond at 60 per minute.
LEVEL_SLACK = 1e-6
# Float noise in a wait (2.0000000000000004 s) must not add a whole second to Retry-After.
ROUNDING_SLACK_S = 1e-9


class LimitStoreUnavailable(Exception):
    """The shared limit store could not be asked; the caller refuses (503), never admits."""


class Kind(StrEnum):
    REQUESTS = "requests"
    TOKENS = "tokens"
    CONCURRENT = "concurrent"


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """One scope's limits; None = no limit of that kind, 0 = none allowed (a blocked key).
    Scopes are opaque ("ws:12")."""

    scope: str
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None

    def __post_init__(self) -> None:
        for value in (self.requests_per_minute, self.tokens_per_minute, self.concurrent):
            if value is not None and value < 0:
                raise ValueError(f"{self.scope}: a limit is a whole number or None")


@dataclass(frozen=True, slots=True)
class PlannedCheck:
    """One (scope, kind) a request must pass, with what it would take there."""

    scope: str
    kind: Kind
    limit: int
    cost: int  # 1 per request, the reserved tokens, 1 lease


@dataclass(frozen=True, slots=True)
class RateState:
    """A GCRA bucket: `level` cost units at `at` (epoch s); TAT = at + level·60/limit."""

    level: float
    at: float


@dataclass(frozen=True, slots=True)
class CheckResult:
    check: PlannedCheck
    admitted: bool
    # Rates: the bucket level before this request (drained to now). Concurrency: the
    # live leases before it.
    before: float


@dataclass(frozen=True, slots=True)
class LimitVerdict:
    admitted: bool
    retry_after_s: int  # 0 when admitted
    refused: str | None  # "SCOPE/KIND" of the longest wait; rsplit("/", 1) parts it
    headers: dict[str, str]


RateKey = tuple[str, Kind]


@dataclass(frozen=True, slots=True)
class LimitUse:
    """How much of one (scope, kind) limit is in use now, for people to read (the console):
    a rate's bucket level — requests or tokens of the last minute not yet drained — or a
    scope's live concurrency leases. `reset_s`: until the bucket is empty (0 for leases)."""

    scope: str
    kind: Kind
    limit: int
    used: float
    reset_s: float

    @property
    def remaining(self) -> float:
        return max(self.limit - self.used, 0.0)


def use_of(check: PlannedCheck, used: float) -> LimitUse:
    """`used` (a drained level, or live leases) of `check`'s limit as a LimitUse."""
    rate = check.kind is not Kind.CONCURRENT and check.limit > 0
    reset_s = used * WINDOW_S / check.limit if rate else 0.0
    return LimitUse(check.scope, check.kind, check.limit, used, reset_s)


def plan_checks(
    specs: Sequence[LimitSpec], *, tokens: int, requests: int = 1
) -> list[PlannedCheck]:
    """Every (scope, kind) a request of `tokens` reserved tokens must pass, in spec order
    (`requests` > 1: a worker's allowance of that many, allowance.py)."""
    if tokens < 0:
        raise ValueError("reserved tokens cannot be negative")
    if len({spec.scope for spec in specs}) != len(specs):
        raise ValueError("each scope may appear once: a repeat would be charged once")
    planned = []
    for spec in specs:
        if spec.requests_per_minute is not None:
            planned.append(
                PlannedCheck(spec.scope, Kind.REQUESTS, spec.requests_per_minute, requests)
            )
        if spec.tokens_per_minute is not None:
            planned.append(PlannedCheck(spec.scope, Kind.TOKENS, spec.tokens_per_minute, tokens))
        if spec.concurrent is not None:
            planned.append(PlannedCheck(spec.scope, Kind.CONCURRENT, spec.concurrent, 1))
    return planned


def drained_level(state: RateState | None, *, limit: int, now: float) -> float:
    """The bucket's level at `now`; a clock that stepped back drains nothing."""
    if state is None:
        return 0.0
    return max(state.level - max(now - state.at, 0.0) * limit / WINDOW_S, 0.0)


def empty_at(state: RateState, *, limit: int) -> float:
    """When the bucket has drained to nothing (the TAT): past it, the state can go."""
    return state.at + state.level * WINDOW_S / limit


def settled(state: RateState | None, *, limit: int, delta: int, now: float) -> RateState:
    """The bucket after adding `delta` units: a refund (negative: reserved but unused
    tokens) never takes it below empty, i.e. the TAT below now; an overrun (positive)
    is charged, so the next requests wait for it."""
    return RateState(max(drained_level(state, limit=limit, now=now) + delta, 0.0), now)


def check(planned: PlannedCheck, before: float) -> CheckResult:
    """Would `planned` pass, given the drained level (rates) or live leases (concurrency)?"""
    if planned.kind is Kind.CONCURRENT:
        return CheckResult(planned, before < planned.limit, before)
    fits = planned.limit > 0 and before + planned.cost <= planned.limit + LEVEL_SLACK
    return CheckResult(planned, fits, before)


def admit(
    planned: Sequence[PlannedCheck],
    rates: Mapping[RateKey, RateState],
    live_leases: Mapping[str, int],
    *,
    now: float,
) -> tuple[LimitVerdict, dict[RateKey, RateState]]:
    """Check every planned (scope, kind) against the state; the verdict and, only when all
    admit, the new bucket states to store (a refusal takes nothing anywhere). Taking the
    concurrency leases of an admitted request is the store's part."""
    results = []
    for one in planned:
        if one.kind is Kind.CONCURRENT:
            before = float(live_leases.get(one.scope, 0))
        else:
            state = rates.get((one.scope, one.kind))
            before = drained_level(state, limit=one.limit, now=now)
        results.append(check(one, before))
    result = verdict(results)
    if not result.admitted:
        return result, {}
    updates: dict[RateKey, RateState] = {
        (r.check.scope, r.check.kind): RateState(r.before + r.check.cost, now)
        for r in results
        if r.check.kind is not Kind.CONCURRENT
    }
    return result, updates


def wait_s(result: CheckResult) -> float:
    """Seconds until a refused check would pass (inf: never); 0 for an admitted one."""
    if result.admitted:
        return 0.0
    one = result.check
    if one.kind is Kind.CONCURRENT:
        return float(CONCURRENCY_RETRY_AFTER_S)
    if one.cost > one.limit or one.limit == 0:
        return math.inf
    return (result.before + one.cost - one.limit) * WINDOW_S / one.limit


def verdict(results: Sequence[CheckResult]) -> LimitVerdict:
    """Admitted only if every check admits; Retry-After and `refused` follow the refusal
    that lasts longest, since the request fits only once all of them do."""
    refusals = [r for r in results if not r.admitted]
    admitted = not refusals
    headers = rate_headers(results, admitted=admitted)
    if admitted:
        return LimitVerdict(True, 0, None, headers)
    longest = max(refusals, key=wait_s)  # the first of equals
    wait = wait_s(longest)
    retry_after = (
        NEVER_FITS_RETRY_AFTER_S if math.isinf(wait) else max(1, math.ceil(wait - ROUNDING_SLACK_S))
    )
    headers["Retry-After"] = str(retry_after)
    refused = f"{longest.check.scope}/{longest.check.kind}"
    return LimitVerdict(False, retry_after, refused, headers)


def rate_headers(results: Sequence[CheckResult], *, admitted: bool) -> dict[str, str]:
    """D-29: per kind that applied, the trio of its limit with the smallest remaining
    fraction, as the state stands after this request (before it, on a refusal)."""
    headers: dict[str, str] = {}
    for kind in (Kind.REQUESTS, Kind.TOKENS):
        shown = []  # (remaining fraction, -reset_s, limit, remaining, reset_s)
        for r in results:
            if r.check.kind is kind:
                limit = r.check.limit
                level = r.before + r.check.cost if admitted else r.before
                remaining = max(math.floor(limit - level + LEVEL_SLACK), 0)
                reset_s = level * WINDOW_S / limit if limit else 0.0
                fraction = remaining / limit if limit else 0.0
                shown.append((fraction, -reset_s, limit, remaining, reset_s))
        if shown:  # the tightest: least left, then the longest reset, then the first
            _, _, limit, remaining, reset_s = min(shown, key=lambda row: row[:2])
            headers[f"x-ratelimit-limit-{kind}"] = str(limit)
            headers[f"x-ratelimit-remaining-{kind}"] = str(remaining)
            headers[f"x-ratelimit-reset-{kind}"] = format_reset(reset_s)
    return headers


def format_reset(seconds: float) -> str:
    """OpenAI's (Go's) duration format at millisecond precision, rounded up so that a
    client waiting that long finds the bucket full: 0s, 20ms, 1s, 2.052s, 6m0s, 1h0m0s."""
    millis = math.ceil(seconds * 1000 - ROUNDING_SLACK_S * 1000)
    if millis <= 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    whole, fraction = divmod(rest, 1000)
    text = f"{whole}.{fraction:03d}".rstrip("0") if fraction else str(whole)
    if hours:
        return f"{hours}h{minutes}m{text}s"
    if minutes:
        return f"{minutes}m{text}s"
    return f"{text}s"
