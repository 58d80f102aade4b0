"""Cooldowns (SPEC R-EXE-3)."""

import pytest

from routing.cooldowns import Cooldowns


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


def _decide_with_cooling(cooling: frozenset[str]):
    import random

    from routing.decide import decide
    from routing.types import LiveState, Mode
    from tests.routing.builders import make_endpoint, make_policy, make_request

    endpoints = [
        make_endpoint(id="cheap", price_input=0.1, price_output=0.1),
        make_endpoint(id="dear", price_input=5.0, price_output=5.0),
    ]
    request = make_request(mode=Mode.PRICE)
    return decide(endpoints, request, make_policy(), LiveState(cooling=cooling),
                  random.Random(0), 0.0)  # fmt: skip


def test_r_exe_3_targets_in_cooldown_are_skipped_while_another_is_available():
    decision = _decide_with_cooling(frozenset({"cheap"}))
    assert [e.id for e in decision.ordered] == ["dear"]
    assert any("cheap" in note for note in decision.notes)


def test_r_exe_3_when_every_target_is_cooling_they_are_still_tried():
    decision = _decide_with_cooling(frozenset({"cheap", "dear"}))
    assert [e.id for e in decision.ordered] == ["cheap", "dear"]
    assert {s.demoted for s in decision.scored} == {"cooldown"}
