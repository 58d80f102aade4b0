"""Cache-aware routing (SPEC R-EXE-6): a conversation whose prompt the provider cached goes
back to that provider first, while policy and cooldowns still win."""

import random

from routing.engine.affinity.prompt_cache import (
    CACHE_PIN_TTL_S,
    SESSION_CACHE_PIN_TTL_S,
    cache_aware,
    cached_tokens,
    keep_cache_pin,
    pin_ttl_s,
)
from routing.engine.decide import decide
from routing.engine.types import LiveState, Mode
from tests.routing.builders import make_endpoint, make_policy, make_request

ENDPOINTS = [
    make_endpoint(id="cheap", provider="alpha", price_input=0.1, price_output=0.1),
    make_endpoint(id="mid-eu", provider="beta", region="eu-west-1", price_input=1.0),
    make_endpoint(id="mid-us", provider="beta", region="us-east-1", price_input=1.2),
    make_endpoint(id="dear", provider="gamma", price_input=5.0, price_output=5.0),
]


NO_LIVE = LiveState()


def _decision(live: LiveState = NO_LIVE, policy=None):
    return decide(ENDPOINTS, make_request(mode=Mode.PRICE), policy or make_policy(), live,
                  random.Random(0), 0.0)  # fmt: skip


def test_r_exe_6_the_cached_provider_goes_first_with_all_its_endpoints_in_order():
    decision, outcome = keep_cache_pin(_decision(), "beta", LiveState())
    assert [e.id for e in decision.ordered] == ["mid-eu", "mid-us", "cheap", "dear"]
    assert [s.endpoint_id for s in decision.scored] == ["mid-eu", "mid-us", "cheap", "dear"]
    assert outcome == "honored"
    assert "prompt cache" in decision.notes[-1]


def test_r_exe_6_a_cooling_endpoint_of_the_cached_provider_is_not_brought_back():
    live = LiveState(cooling=frozenset({"mid-eu"}))
    decision, outcome = keep_cache_pin(_decision(live), "beta", live)
    # the pin lifts only the warm endpoint; the cooling one stays last (R-EXE-3)
    assert [e.id for e in decision.ordered] == ["mid-us", "cheap", "dear", "mid-eu"]
    assert outcome == "honored"


def test_r_exe_6_the_pin_is_released_when_the_provider_cools_down_or_is_filtered_out():
    live = LiveState(cooling=frozenset({"mid-eu", "mid-us"}))
    decision, outcome = keep_cache_pin(_decision(live), "beta", live)
    assert decision.ordered[0].id == "cheap"
    assert outcome == "released"
    denied = _decision(policy=make_policy(provider_deny=["beta"]))
    decision, outcome = keep_cache_pin(denied, "beta", LiveState())
    assert "beta" not in {e.provider for e in decision.ordered}
    assert outcome == "released"


def test_r_exe_6_no_pin_changes_nothing():
    decision = _decision()
    assert keep_cache_pin(decision, None, LiveState()) == (decision, None)


def test_r_exe_6_only_a_real_cache_read_counts_and_the_request_can_opt_out():
    assert cached_tokens({"prompt_tokens_details": {"cached_tokens": 1024}}) == 1024
    assert cached_tokens({"prompt_tokens_details": {"cached_tokens": 0}}) == 0
    assert cached_tokens({"prompt_tokens": 10}) == 0
    assert cached_tokens(None) == 0
    assert cache_aware({}) is True
    assert cache_aware({"cache_aware_routing": False}) is False


def test_r_exe_6_pins_last_15_minutes_or_24_hours_with_a_named_session():
    assert pin_ttl_s(explicit_session=False) == CACHE_PIN_TTL_S == 900
    assert pin_ttl_s(explicit_session=True) == SESSION_CACHE_PIN_TTL_S == 86_400
