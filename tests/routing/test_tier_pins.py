"""Upward-only session pins of smart tier routing (SPEC R-TIER-3, R-TIER-4), with a
controlled clock: every `now` below is explicit."""

from __future__ import annotations

from typing import Any

import pytest

from routing.engine.tiers.choose import TierAlias, choose_tier, tier_config
from routing.engine.tiers.pins import InProcessTierPins, TierPinStore, pin_key

T0 = 1_767_225_600.0
TTL_S = 1800.0
KEY = pin_key("normal", "7:11:header:conv-1")
SESSION = "7:11:header:conv-1"
NORMAL = TierAlias(name="normal", easy="normal-easy", hard="normal-hard", default="easy")
CONFIG = tier_config({"aliases": {"normal": {"easy": "normal-easy", "hard": "normal-hard"}}})
HARD_ASK = "Find the root cause of the 502s."  # an effort keyword: 4 points, hard
THANKS = "thanks!"  # 0 points, easy


def _ask(
    pins: TierPinStore, text: str, at: float, headers: dict[str, str] | None = None
) -> tuple[str, str, str]:
    """One request of the conversation to the `normal` alias: (tier, source, target)."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    assert CONFIG is not None
    verdict, target = choose_tier(NORMAL, body, headers or {}, CONFIG, pins, SESSION, at)
    return verdict.tier, verdict.source, target


def test_pin_key_is_alias_and_scoped_session():
    assert pin_key("normal", "7:11:hash:ab12") == "normal|7:11:hash:ab12"


# The store.


def test_r_tier_3_store_is_empty_until_pinned():
    # given
    pins = InProcessTierPins()
    # when / then
    assert pins.get(KEY, T0) is None
    pins.pin_hard(KEY, T0, TTL_S)
    assert pins.get(KEY, T0) == "hard"


def test_r_tier_3_pin_expires_after_ttl_idle():
    # given
    pins = InProcessTierPins()
    pins.pin_hard(KEY, T0, TTL_S)
    # when / then: live one second before, gone at exactly the TTL
    assert pins.get(KEY, T0 + TTL_S - 1) == "hard"
    assert pins.get(KEY, T0 + TTL_S) is None
    assert len(pins) == 0  # purged on that read


def test_r_tier_3_get_does_not_slide_the_pin():
    # given
    pins = InProcessTierPins()
    pins.pin_hard(KEY, T0, TTL_S)
    # when
    pins.get(KEY, T0 + 1000)
    # then
    assert pins.get(KEY, T0 + TTL_S) is None


def test_r_tier_3_touch_slides_a_live_pin():
    # given
    pins = InProcessTierPins()
    pins.pin_hard(KEY, T0, TTL_S)
    # when
    pins.touch(KEY, T0 + 1000, TTL_S)
    # then
    assert pins.get(KEY, T0 + 1000 + TTL_S - 1) == "hard"
    assert pins.get(KEY, T0 + 1000 + TTL_S) is None


@pytest.mark.parametrize("pinned_at", [None, T0 - TTL_S])
def test_r_tier_3_touch_never_creates_or_revives_a_pin(pinned_at):
    # given no pin, or one that has expired
    pins = InProcessTierPins()
    if pinned_at is not None:
        pins.pin_hard(KEY, pinned_at, TTL_S)
    # when
    pins.touch(KEY, T0, TTL_S)
    # then
    assert pins.get(KEY, T0) is None
    assert len(pins) == 0


def test_r_tier_3_store_is_bounded_least_recently_used_first():
    # given a full store where "a" was refreshed last
    pins = InProcessTierPins(max_entries=2)
    pins.pin_hard("a", T0, TTL_S)
    pins.pin_hard("b", T0 + 1, TTL_S)
    pins.touch("a", T0 + 2, TTL_S)
    # when
    pins.pin_hard("c", T0 + 3, TTL_S)
    # then
    assert (pins.get("a", T0 + 4), pins.get("b", T0 + 4), pins.get("c", T0 + 4)) == (
        "hard", None, "hard",
    )  # fmt: skip
    assert len(pins) == 2


def test_r_tier_3_expired_pins_are_purged_lazily_on_writes():
    # given two pins that lapsed without being read
    pins = InProcessTierPins()
    pins.pin_hard("a", T0, 10)
    pins.pin_hard("b", T0, 10)
    # when
    pins.pin_hard("c", T0 + 10, TTL_S)
    # then
    assert len(pins) == 1


def test_store_rejects_a_zero_bound():
    with pytest.raises(ValueError, match="max_entries must be at least 1"):
        InProcessTierPins(max_entries=0)


# Conversations through choose_tier (R-TIER-3, R-TIER-4).


def test_r_tier_3_escalated_conversation_stays_hard_after_thanks_until_the_ttl_lapses():
    # given a conversation that escalated to hard
    pins = InProcessTierPins()
    assert _ask(pins, HARD_ASK, T0) == ("hard", "classifier", "normal-hard")
    # when "thanks!" follows, each request within the TTL of the previous one
    at = T0
    for _ in range(3):
        at += TTL_S - 1
        # then it stays hard; three idle gaps of almost a TTL show the TTL slides
        assert _ask(pins, THANKS, at) == ("hard", "pinned", "normal-hard")
    # and after a full TTL without a request it is easy again
    assert _ask(pins, THANKS, at + TTL_S) == ("easy", "classifier", "normal-easy")


def test_r_tier_3_hard_to_easy_never_happens_silently():
    # given a hard pin
    pins = InProcessTierPins()
    _ask(pins, HARD_ASK, T0)
    # when every later request alone would classify easy
    tiers = [_ask(pins, text, T0 + i) for i, text in enumerate(["ok", "thanks!", "bye"], 1)]
    # then each one is hard and says why
    assert tiers == [("hard", "pinned", "normal-hard")] * 3


def test_r_tier_3_easy_to_hard_is_allowed_and_easy_is_never_pinned():
    # given an easy conversation
    pins = InProcessTierPins()
    assert _ask(pins, THANKS, T0) == ("easy", "classifier", "normal-easy")
    assert len(pins) == 0
    # when it turns hard
    assert _ask(pins, HARD_ASK, T0 + 1) == ("hard", "classifier", "normal-hard")
    # then it is pinned
    assert pins.get(KEY, T0 + 2) == "hard"


def test_r_tier_3_a_hard_verdict_slides_an_existing_pin():
    # given
    pins = InProcessTierPins()
    _ask(pins, HARD_ASK, T0)
    # when
    _ask(pins, HARD_ASK, T0 + 1000)
    # then
    assert pins.get(KEY, T0 + 1000 + TTL_S - 1) == "hard"


def test_r_tier_3_pins_are_per_alias():
    # given a hard pin on `normal`
    pins = InProcessTierPins()
    _ask(pins, HARD_ASK, T0)
    other = TierAlias(name="chat", easy="chat-easy", hard="chat-hard", default="easy")
    body = {"messages": [{"role": "user", "content": THANKS}]}
    assert CONFIG is not None
    # when the same session calls another alias
    verdict, target = choose_tier(other, body, {}, CONFIG, pins, SESSION, T0 + 1)
    # then that alias is not pinned
    assert (verdict.tier, target) == ("easy", "chat-easy")


@pytest.mark.parametrize(
    ("headers", "source"),
    [({"X-Switchyard-Tier": "easy"}, "forced"), ({"X-Switchyard-Smart-Routing": "off"}, "off")],
)
def test_r_tier_4_forced_and_off_requests_leave_a_hard_pin_unchanged(headers, source):
    # given a hard pin set at T0
    pins = InProcessTierPins()
    _ask(pins, HARD_ASK, T0)
    # when an overriding request comes just before the pin lapses
    result = _ask(pins, THANKS, T0 + TTL_S - 10, headers)
    # then it is easy as asked
    assert result == ("easy", source, "normal-easy")
    # and the pin is neither removed nor slid: it still lapses at T0 + TTL
    assert pins.get(KEY, T0 + TTL_S - 1) == "hard"
    assert pins.get(KEY, T0 + TTL_S) is None


def test_r_tier_4_forcing_hard_does_not_create_a_pin():
    # given
    pins = InProcessTierPins()
    # when
    assert _ask(pins, THANKS, T0, {"X-Switchyard-Tier": "hard"}) == (
        "hard", "forced", "normal-hard",
    )  # fmt: skip
    # then the next normal request is classified on its own
    assert len(pins) == 0
    assert _ask(pins, THANKS, T0 + 1) == ("easy", "classifier", "normal-easy")


# Sharing between replicas (R-BEY-9): the hook and the remote side, no Redis here.


def _told_pins() -> tuple[InProcessTierPins, list[tuple[str, float]]]:
    pins = InProcessTierPins(republish_after_s=60)
    told: list[tuple[str, float]] = []
    pins.listener = lambda *change: told.append(change)
    return pins, told


def test_r_bey_9_a_new_hard_pin_is_told_at_once_and_slides_only_when_stale():
    # given
    pins, told = _told_pins()
    # when a session turns hard and then keeps going, pinned or classified hard again
    pins.pin_hard(KEY, T0, TTL_S)
    pins.touch(KEY, T0 + 30, TTL_S)
    pins.pin_hard(KEY, T0 + 60, TTL_S)
    pins.touch(KEY, T0 + 61, TTL_S)
    pins.touch(KEY, T0 + 100, TTL_S)
    # then the upgrade is told at once, and slides once the shared expiry is 60 s stale
    assert told == [(KEY, T0 + TTL_S), (KEY, T0 + 61 + TTL_S)]


def test_r_bey_9_a_lapsed_pin_made_hard_again_is_told_at_once():
    pins, told = _told_pins()
    pins.pin_hard(KEY, T0, TTL_S)
    pins.touch(KEY, T0 + TTL_S, TTL_S)  # lapsed: touching neither revives nor tells
    pins.pin_hard(KEY, T0 + TTL_S + 1, TTL_S)
    assert told == [(KEY, T0 + TTL_S), (KEY, T0 + 2 * TTL_S + 1)]


def test_r_bey_9_a_remote_pin_is_honoured_here_and_not_told_back():
    # given
    pins, told = _told_pins()
    # when another replica pinned the session hard
    pins.apply_remote(KEY, T0 + TTL_S)
    # then a "thanks!" here stays hard, and nothing is told back
    assert _ask(pins, THANKS, T0 + 1) == ("hard", "pinned", "normal-hard")
    assert told == []


def test_r_bey_9_a_remote_pin_never_shortens_a_live_one():
    pins, _told = _told_pins()
    pins.pin_hard(KEY, T0, TTL_S)
    pins.apply_remote(KEY, T0 + 10)
    assert pins.get(KEY, T0 + TTL_S - 1) == "hard"
