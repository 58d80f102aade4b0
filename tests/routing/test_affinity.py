"""Session keeping (SPEC R-EXE-7)."""

import random

from routing.affinity import SessionPins, keep_session
from routing.decide import decide
from routing.types import LiveState, Mode
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


def test_session_pins_slide_and_expire():
    pins = SessionPins(ttl_s=10)
    pins.pin("s", "dear", now=0.0)
    assert pins.get("s", now=9.0) == "dear"
    pins.pin("s", "dear", now=9.0)  # activity refreshes
    assert pins.get("s", now=18.0) == "dear"
    assert pins.get("s", now=19.0) is None
