"""Session keeping (SPEC R-EXE-7)."""

import random

import pytest

from routing.engine.affinity.keeping import (
    SessionPins,
    affinity_skipped,
    keep_session,
)
from routing.engine.decide import decide
from routing.engine.routes.graph import ModelNode, node_pin_scope
from routing.engine.types import LiveState, Mode, ProviderPrefs
from tests.routing.builders import make_endpoint, make_policy, make_request

ENDPOINTS = [
    make_endpoint(id="cheap", price_input=0.1, price_output=0.1),
    make_endpoint(id="mid", price_input=1.0, price_output=1.0),
    make_endpoint(id="dear", price_input=5.0, price_output=5.0),
]


NO_LIVE = LiveState()


def _decision(live: LiveState = NO_LIVE, endpoints=ENDPOINTS):
    return decide(endpoints, make_request(mode=Mode.PRICE), make_policy(), live,
                  random.Random(0), 0.0)  # fmt: skip


def test_r_exe_7_a_session_stays_on_its_target_though_a_cheaper_one_exists():
    decision, outcome = keep_session(_decision(), "dear", LiveState())
    assert [e.id for e in decision.ordered] == ["dear", "cheap", "mid"]
    assert [s.endpoint_id for s in decision.scored] == ["dear", "cheap", "mid"]
    assert outcome == "honored"


def test_r_exe_7_the_pin_is_released_when_its_target_cools_down():
    live = LiveState(cooling=frozenset({"dear"}))
    decision, outcome = keep_session(_decision(live), "dear", live)
    assert decision.ordered[0].id == "cheap"  # the selector's choice, to be re-pinned
    assert outcome == "released"


def test_r_exe_7_policy_beats_affinity():
    # the pinned endpoint no longer passes the filter: it is not brought back
    decision, outcome = keep_session(_decision(endpoints=ENDPOINTS[:2]), "dear", LiveState())
    assert [e.id for e in decision.ordered] == ["cheap", "mid"]
    assert outcome == "released"


def test_r_exe_7_with_one_eligible_target_the_selector_is_skipped():
    decision, outcome = keep_session(_decision(endpoints=ENDPOINTS[2:]), "dear", LiveState())
    assert [e.id for e in decision.ordered] == ["dear"]
    assert outcome is None


ORDER_NOTE = (
    "Affinity skipped: the request sets provider.order (dear, cheap), which takes priority "
    "over session keeping and prompt-cache pins; no pin is followed or set."
)


@pytest.mark.parametrize(
    ("_case", "provider", "expected"),
    [
        ("no provider object", {}, None),
        ("filters only", {"only": ["cheap", "dear"], "ignore": ["mid"]}, None),
        ("an explicit order", {"order": ["dear", "cheap"]}, ORDER_NOTE),
    ],
)
def test_an_explicit_provider_order_turns_affinity_off_and_says_why(_case, provider, expected):
    # given
    request = make_request(provider=provider)
    # when
    note = affinity_skipped(request)
    # then the client's own order wins over any pin (D-15), and the record says why
    assert note == expected


def test_session_pins_slide_and_expire():
    pins = SessionPins(ttl_s=10)
    pins.pin("s", "dear", now=0.0)
    assert pins.get("s", now=9.0) == "dear"
    pins.pin("s", "dear", now=9.0)  # activity refreshes
    assert pins.get("s", now=18.0) == "dear"
    assert pins.get("s", now=19.0) is None


def test_session_pins_take_a_ttl_per_pin():
    pins = SessionPins(ttl_s=10)
    pins.pin("s", "dear", now=0.0, ttl_s=100)
    assert pins.get("s", now=99.0) == "dear"
    assert pins.get("s", now=100.0) is None


# Sharing between replicas (R-BEY-9): the hook and the remote side, no Redis here.


def _told_pins(**kwargs) -> tuple[SessionPins, list[tuple[str, str, float]]]:
    pins = SessionPins(**kwargs)
    told: list[tuple[str, str, float]] = []
    pins.listener = lambda *change: told.append(change)
    return pins, told


def test_r_bey_9_a_new_or_moved_pin_is_told_at_once():
    # given
    pins, told = _told_pins(ttl_s=1000, republish_after_s=60)
    # when
    pins.pin("s", "dear", now=0.0)
    pins.pin("s", "cheap", now=1.0)  # the session moved (its target cooled down)
    # then
    assert told == [("s", "dear", 1000.0), ("s", "cheap", 1001.0)]


def test_r_bey_9_sliding_a_pin_is_told_only_once_the_shared_expiry_is_stale():
    # given a pin told at 0 (expiring at 1000)
    pins, told = _told_pins(ttl_s=1000, republish_after_s=60)
    pins.pin("s", "dear", now=0.0)
    # when it slides with every request
    for now in (10.0, 30.0, 60.0, 61.0, 100.0, 121.0, 122.0):
        pins.pin("s", "dear", now=now)
    # then only slides past 60 s of the last told expiry are told
    assert told == [("s", "dear", 1000.0), ("s", "dear", 1061.0), ("s", "dear", 1122.0)]
    assert pins.get("s", now=1121.0) == "dear"  # the local pin slid every time


def test_r_bey_9_a_lapsed_pin_pinned_again_is_told_at_once():
    pins, told = _told_pins(ttl_s=10, republish_after_s=60)
    pins.pin("s", "dear", now=0.0)
    pins.pin("s", "dear", now=10.0)  # exactly at expiry: the others dropped it
    assert [change[2] for change in told] == [10.0, 20.0]


def test_r_bey_9_a_shorter_ttl_per_pin_is_told_when_it_is_off_by_more_than_the_slack():
    pins, told = _told_pins(ttl_s=24 * 3600.0, republish_after_s=60)
    pins.pin("s", "dear", now=0.0)
    pins.pin("s", "dear", now=1.0, ttl_s=900)  # e.g. a cache pin's 15 minutes
    assert told == [("s", "dear", 86400.0), ("s", "dear", 901.0)]


def test_r_bey_9_a_remote_pin_is_applied_as_told_and_not_told_back():
    # given a local pin
    pins, told = _told_pins(ttl_s=1000, republish_after_s=60)
    pins.pin("s", "dear", now=0.0)
    told.clear()
    # when another replica moved the session
    pins.apply_remote("s", "cheap", expires_at=500.0)
    # then the last one told wins, and nothing is told back
    assert pins.get("s", now=499.0) == "cheap"
    assert pins.get("s", now=500.0) is None
    assert told == []


def test_r_bey_9_sliding_a_remote_pin_here_is_told_only_once_it_drifts():
    # given a pin that arrived from another replica
    pins, told = _told_pins(ttl_s=1000, republish_after_s=60)
    pins.apply_remote("s", "dear", expires_at=1000.0)
    # when this replica serves the session, shortly and then much later
    pins.pin("s", "dear", now=30.0)
    pins.pin("s", "dear", now=90.0)
    # then the others hear of it only once their copy is more than 60 s stale
    assert told == [("s", "dear", 1090.0)]


CANARY = ModelNode(id="canary", model="m", provider=ProviderPrefs(only=frozenset({"b", "a"})))


def test_r_bey_4_a_route_node_scopes_pins_by_what_it_says_not_by_its_name():
    renamed = ModelNode(id="stable", model="m", provider=ProviderPrefs(only=frozenset({"a", "b"})))
    assert node_pin_scope(renamed) == node_pin_scope(CANARY)


@pytest.mark.parametrize(
    "other",
    [
        ModelNode(id="canary", model="m"),  # the version rolled back to: no narrowing
        ModelNode(id="canary", model="m", provider=ProviderPrefs(only=frozenset({"a"}))),
        ModelNode(id="canary", model="n", provider=CANARY.provider),
        ModelNode(id="canary", model="m", provider=CANARY.provider, mode=Mode.LATENCY),
        ModelNode(id="canary", model="m", provider=CANARY.provider, session_affinity=True),
    ],
)
def test_r_bey_4_a_node_defined_otherwise_finds_none_of_the_canarys_pins(other):
    assert node_pin_scope(other) != node_pin_scope(CANARY)
