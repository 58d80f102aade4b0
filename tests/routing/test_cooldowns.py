"""Cooldowns (SPEC R-EXE-3)."""

import pytest

from routing.engine.cooldowns import Cooldowns


def test_r_exe_3_429_starts_a_cooldown_that_doubles_up_to_the_maximum():
    # given
    cooldowns = Cooldowns(base_s=30, max_s=300)
    # when consecutive 429s arrive, each after the previous cooldown ended
    seconds = []
    now = 0.0
    for _ in range(6):
        started = cooldowns.failure("ep", 429, now)
        seconds.append(started.seconds)
        now += started.seconds + 1
    # then
    assert seconds == [30, 60, 120, 240, 300, 300]


def test_r_exe_3_the_endpoint_cools_for_the_cooldown_and_then_comes_back():
    cooldowns = Cooldowns(base_s=30, max_s=300)
    cooldowns.failure("ep", 429, now=100.0)
    assert cooldowns.cooling(now=129.9) == frozenset({"ep"})
    assert cooldowns.cooling(now=130.0) == frozenset()


@pytest.mark.parametrize("status", [401, 403, 404])
def test_r_exe_3_dead_key_or_missing_model_gets_the_maximum_at_once(status):
    cooldowns = Cooldowns(base_s=30, max_s=300)
    started = cooldowns.failure("ep", status, now=0.0)
    assert (started.seconds, started.reason) == (300, "auth_or_not_found")


def test_r_exe_3_three_consecutive_server_errors_start_a_cooldown():
    cooldowns = Cooldowns(base_s=30, max_s=300)
    assert cooldowns.failure("ep", 503, now=0.0) is None
    assert cooldowns.failure("ep", None, now=1.0) is None  # a network error counts too
    started = cooldowns.failure("ep", 502, now=2.0)
    assert (started.seconds, started.reason) == (30, "server_errors")


def test_r_exe_3_a_success_resets_the_count_and_the_doubling():
    cooldowns = Cooldowns(base_s=30, max_s=300)
    cooldowns.failure("ep", 503, now=0.0)
    cooldowns.failure("ep", 503, now=1.0)
    cooldowns.success("ep")
    assert cooldowns.failure("ep", 503, now=2.0) is None
    cooldowns.failure("ep", 429, now=3.0)
    cooldowns.success("ep")
    assert cooldowns.failure("ep", 429, now=100.0).seconds == 30


def test_r_exe_3_a_longer_retry_after_is_honoured_but_capped():
    cooldowns = Cooldowns(base_s=30, max_s=300)
    assert cooldowns.failure("a", 429, now=0.0, retry_after_s=90).seconds == 90
    assert cooldowns.failure("b", 429, now=0.0, retry_after_s=5).seconds == 30
    assert cooldowns.failure("c", 429, now=0.0, retry_after_s=9999).seconds == 300


def test_client_errors_never_cool_an_endpoint():
    cooldowns = Cooldowns()
    for status in (400, 413, 422):
        assert cooldowns.failure("ep", status, now=0.0) is None
    assert cooldowns.cooling(now=0.0) == frozenset()


def _decide_with_cooling(cooling: frozenset[str], unhealthy: frozenset[str] = frozenset()):
    import random

    from routing.engine.decide import decide
    from routing.engine.types import LiveState, Mode
    from tests.routing.builders import make_endpoint, make_policy, make_request

    endpoints = [
        make_endpoint(id="cheap", price_input=0.1, price_output=0.1),
        make_endpoint(id="mid", price_input=1.0, price_output=1.0),
        make_endpoint(id="dear", price_input=5.0, price_output=5.0),
    ]
    request = make_request(mode=Mode.PRICE)
    live = LiveState(cooling=cooling, unhealthy=unhealthy)
    return decide(endpoints, request, make_policy(), live, random.Random(0), 0.0)


@pytest.mark.parametrize(
    ("_case", "cooling", "unhealthy", "expected"),
    [
        ("nothing cooling", set(), set(), [("cheap", None), ("mid", None), ("dear", None)]),
        ("the first cooling", {"cheap"}, set(),
         [("mid", None), ("dear", None), ("cheap", "cooldown")]),
        ("two cooling keep their order", {"cheap", "mid"}, set(),
         [("dear", None), ("cheap", "cooldown"), ("mid", "cooldown")]),
        ("cooling after unhealthy", {"cheap"}, {"mid"},
         [("dear", None), ("mid", "unhealthy"), ("cheap", "cooldown")]),
    ],
)  # fmt: skip
def test_r_exe_3_targets_in_cooldown_are_tried_after_every_other(
    _case, cooling, unhealthy, expected
):
    # given the price order cheap, mid, dear
    # when some are cooling (or unhealthy)
    decision = _decide_with_cooling(frozenset(cooling), frozenset(unhealthy))
    # then the cooling ones are still in the attempt list, last, marked: skipped while
    # another is available, tried when the others fail (better to try than to refuse)
    assert [(s.endpoint_id, s.demoted) for s in decision.scored] == expected
    assert [e.id for e in decision.ordered] == [eid for eid, _why in expected]


def test_r_exe_3_the_decision_notes_name_the_endpoints_tried_last_for_their_cooldown():
    decision = _decide_with_cooling(frozenset({"cheap", "mid"}))
    assert decision.notes == ("In cooldown, tried after the others: cheap, mid.",)


def test_r_exe_3_when_every_target_is_cooling_they_are_still_tried():
    decision = _decide_with_cooling(frozenset({"cheap", "mid", "dear"}))
    assert [e.id for e in decision.ordered] == ["cheap", "mid", "dear"]
    assert {s.demoted for s in decision.scored} == {"cooldown"}


# Sharing between replicas (R-BEY-9): the hook and the remote side, no Redis here.


def test_r_bey_9_a_started_cooldown_is_told_with_its_end_and_reason():
    # given
    cooldowns = Cooldowns(base_s=30, max_s=300)
    told = []
    cooldowns.listener = lambda *change: told.append(change)
    # when
    cooldowns.failure("ep", 503, now=100.0)
    cooldowns.failure("ep", 503, now=101.0)  # two server errors start nothing yet
    cooldowns.failure("other", 400, now=101.0)  # a client error never does
    cooldowns.failure("ep", 401, now=102.0)
    # then
    assert told == [("ep", 402.0, "auth_or_not_found")]


def test_r_bey_9_a_remote_cooldown_cools_the_endpoint_until_its_end():
    # given
    cooldowns = Cooldowns(base_s=30, max_s=300)
    told = []
    cooldowns.listener = lambda *change: told.append(change)
    # when another replica's cooldown is applied
    cooldowns.apply_remote("ep", until=160.0, reason="rate_limited")
    # then it cools here too, and is not told back
    assert cooldowns.cooling(now=159.9) == frozenset({"ep"})
    assert cooldowns.cooling(now=160.0) == frozenset()
    assert cooldowns.remaining_s("ep", now=100.0) == 60.0
    assert told == []


def test_r_bey_9_a_remote_cooldown_never_shortens_a_longer_local_one_or_its_doubling():
    # given a local 429 cooldown (30 s) and a shorter remote one
    cooldowns = Cooldowns(base_s=30, max_s=300)
    cooldowns.failure("ep", 429, now=0.0)
    cooldowns.apply_remote("ep", until=10.0, reason="rate_limited")
    # then the local end holds
    assert cooldowns.cooling(now=29.0) == frozenset({"ep"})
    # and the next local 429 still doubles from this node's own count
    assert cooldowns.failure("ep", 429, now=31.0).seconds == 60


def test_r_exe_3_failures_of_requests_already_in_flight_do_not_escalate_the_cooldown():
    cooldowns = Cooldowns(base_s=30, max_s=300)
    assert cooldowns.failure("ep", 429, now=0.0).seconds == 30
    # ten more 429s from requests sent before the first was recorded
    assert [cooldowns.failure("ep", 429, now=0.5) for _ in range(10)] == [None] * 10
    assert cooldowns.remaining_s("ep", now=0.5) == 29.5
    # the next 429 after the cooldown is a consecutive trigger: it doubles once
    assert cooldowns.failure("ep", 429, now=31.0).seconds == 60
    # a dead key still takes the maximum at once, even while cooling
    assert cooldowns.failure("ep", 401, now=32.0).seconds == 300


def test_r_exe_3_the_workspace_policy_sets_base_and_maximum():
    cooldowns = Cooldowns(base_s=30, max_s=300)
    assert cooldowns.failure("ep", 429, now=0.0, base_s=5, max_s=8).seconds == 5
    assert cooldowns.failure("ep", 429, now=6.0, base_s=5, max_s=8).seconds == 8  # capped
    assert cooldowns.failure("other", 404, now=0.0, base_s=5, max_s=8).seconds == 8
