"""A worker's allowance as arithmetic (budgets/rules/allowance.py; SPEC R-POL-2,
R-LIM-1, R-LIM-2): which requests may share one, when there is room to take one, and
that the requests it admits never spend more than it reserved. No Redis, no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from budgets.rules.allowance import (
    ACCEPT_S,
    HEADROOM,
    Allowance,
    Room,
    opening,
    room_after,
    shape_of,
)
from budgets.rules.budgets import BudgetRule, charges
from budgets.rules.holds import Hold, Verdict
from budgets.rules.limits import LimitSpec, plan_checks
from budgets.rules.route_usage import UNCAPPED

NOW = 1_796_083_200.0
RPM = [LimitSpec("key:1:bot", requests_per_minute=100_000)]


def _hold(amount: int = 1000, cap: int = 10**12, expires: float = NOW + 660) -> Hold:
    return Hold("r", 1, charges([BudgetRule("key:1:bot", "daily", cap)], NOW), amount, expires)


def _allowance(requests: int = 4, amount: int = 1000, levels: tuple[float, ...] = (10.0,)):
    reservation = opening("allowance-1", _hold(amount), requests)
    return Allowance("allowance-1", tuple(RPM), reservation, requests, NOW, levels, 5_000_000)


def test_r_lim_1_token_and_concurrency_limits_are_admitted_one_request_at_a_time() -> None:
    # given limits that give back tokens or a lease when each request ends
    for spec in (LimitSpec("ws:1", tokens_per_minute=10**9),
                 LimitSpec("ws:1", requests_per_minute=10**6, concurrent=100)):  # fmt: skip
        # then no allowance admits requests under them
        assert shape_of([spec], _hold()) is None
    # and requests-per-minute limits alone may share one
    assert shape_of(RPM, _hold()) == shape_of(RPM, _hold(amount=7))


def test_r_lim_2_a_counter_a_route_reads_as_requests_come_takes_no_allowance() -> None:
    # a route's rate node reads the key's requests as they are admitted: an uncapped counter
    tracking = Hold("r", 1, charges([BudgetRule("key:1:bot", "daily", UNCAPPED)], NOW), 1, NOW)
    assert shape_of(RPM, tracking) is None


def test_r_pol_2_an_allowance_is_taken_only_while_headroom_allowances_fit_under_every_cap() -> None:
    # 64 requests of 1,000 micro-dollars: room for HEADROOM of them is needed on each
    need = HEADROOM * 64
    assert Room(need, need * 1000).fits(64, 1000)
    assert not Room(need - 1, need * 1000).fits(64, 1000)
    assert not Room(need, need * 1000 - 1).fits(64, 1000)
    assert Room(None, need * 1000).fits(64, 1000)  # no limit
    assert Room(need, None).fits(64, 1000)  # no budget


def test_the_room_an_admission_leaves_is_after_it_under_the_tightest_limit() -> None:
    planned = plan_checks([LimitSpec("ws:1", requests_per_minute=100),
                           LimitSpec("key:1:bot", requests_per_minute=50)], tokens=0)  # fmt: skip
    room = room_after([10.0, 45.0], planned, Verdict(True, 123))
    assert (room.requests, room.micros) == (4.0, 123)


def test_r_lim_2_an_allowance_admits_as_many_requests_as_it_took_then_no_more() -> None:
    allowance = _allowance(requests=3)
    admitted = [allowance.draw(_hold(), NOW) for _ in range(4)]
    assert [a is not None for a in admitted] == [True, True, True, False]
    assert allowance.unused == 0


def test_r_lim_2_an_allowance_admits_nothing_once_its_time_is_up() -> None:
    allowance = _allowance()
    assert allowance.draw(_hold(), NOW + ACCEPT_S - 0.001) is not None
    assert allowance.draw(_hold(), NOW + ACCEPT_S) is None
    assert allowance.unused == 3  # (given back to the limits when it closes)


def test_r_pol_2_a_request_dearer_than_what_is_left_of_the_allowance_is_not_admitted_by_it() -> (
    None
):
    allowance = _allowance(requests=4, amount=1000)  # 4,000 reserved
    assert allowance.draw(_hold(amount=3000), NOW) is not None
    assert allowance.draw(_hold(amount=1001), NOW) is None
    # and what a request did not use of its worst case is there again for the next
    assert not allowance.returned(_hold(amount=3000), 1000)
    assert allowance.draw(_hold(amount=3000), NOW) is not None


def test_a_request_that_may_outlive_the_allowances_reservation_is_not_admitted_by_it() -> None:
    allowance = _allowance()
    assert allowance.draw(_hold(expires=NOW + 660 + ACCEPT_S + 1), NOW) is None


def test_an_allowance_closes_once_it_admits_no_more_and_its_last_request_ended() -> None:
    allowance = _allowance()
    allowance.draw(_hold(), NOW)
    allowance.draw(_hold(), NOW)
    # closed while two requests are under way: not yet
    assert not allowance.close()
    assert allowance.draw(_hold(), NOW) is None
    assert not allowance.returned(_hold(), 300)
    # the last one's end closes it, once
    assert allowance.returned(_hold(), 200)
    assert not allowance.close()
    assert (allowance.drawn, allowance.spent_micros, allowance.unused) == (2, 500, 2)


def test_r_lim_1_a_request_from_an_allowance_gets_the_headers_redis_would_have_given() -> None:
    # the limit's level was 10 before the allowance; each request admitted adds one
    allowance = _allowance(requests=4, levels=(10.0,))
    first, second = allowance.draw(_hold(), NOW), allowance.draw(_hold(), NOW)
    assert first is not None
    assert second is not None
    assert first[0].headers["x-ratelimit-remaining-requests"] == str(100_000 - 11)
    assert second[0].headers["x-ratelimit-remaining-requests"] == str(100_000 - 12)
    # and the budget's remaining counts what the allowance still holds as available
    assert first[1].remaining_micros == 5_000_000 + 3000
    assert second[1].remaining_micros == 5_000_000 + 2000


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 5000), st.integers(0, 5000)),
                max_size=60))  # fmt: skip
def test_r_pol_2_requests_from_an_allowance_never_spend_more_than_it_reserved(steps) -> None:
    """Whatever requests come and end, at whatever cost up to their worst case: what they
    spent plus the worst case of those under way stays within the reservation."""
    allowance = _allowance(requests=16, amount=2000)
    reserved = allowance.hold.amount_micros
    under_way: list[Hold] = []
    for ends, amount, cost in steps:
        if ends and under_way:
            hold = under_way.pop(0)
            allowance.returned(hold, min(cost, hold.amount_micros))
        elif allowance.draw(hold := _hold(amount=amount), NOW) is not None:
            under_way.append(hold)
        held = sum(h.amount_micros for h in under_way)
        assert allowance.spent_micros + held <= reserved
        assert allowance.left_micros == reserved - allowance.spent_micros - held
