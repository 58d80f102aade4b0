"""The routing reason sentence names the endpoint that really serves (SPEC R-API-5): a
session pin, a cache pin or a failover may put another endpoint first."""

import random

from routing.engine.affinity.keeping import keep_session
from routing.engine.affinity.prompt_cache import keep_cache_pin
from routing.engine.decide import decide, reason_for
from routing.engine.types import LiveState, Mode
from tests.routing.builders import make_endpoint, make_policy, make_request

ENDPOINTS = [
    make_endpoint(id="cheap", provider="groq", region="us-east-1", price_input=0.1,
                  price_output=0.1),
    make_endpoint(id="dear", provider="mistral", region="eu-west-1", price_input=5.0,
                  price_output=5.0),
]  # fmt: skip


def _decision():
    return decide(ENDPOINTS, make_request(mode=Mode.PRICE), make_policy(), LiveState(),
                  random.Random(0), 0.0)  # fmt: skip


def test_the_sentence_names_the_first_endpoint_of_a_fresh_decision():
    assert " at groq;" in _decision().reason


def test_a_session_pin_retells_the_sentence_for_its_endpoint():
    # when the session pin puts the dear endpoint first
    decision, _outcome = keep_session(_decision(), "dear", LiveState())
    # then
    assert " in eu-west-1 " in decision.reason
    assert " at mistral;" in decision.reason
    assert "groq" not in decision.reason


def test_a_cache_pin_retells_the_sentence_for_its_provider():
    decision, _outcome = keep_cache_pin(_decision(), "mistral", LiveState())
    assert " at mistral;" in decision.reason


def test_after_a_failover_the_sentence_is_told_for_the_endpoint_that_served():
    decision = _decision()
    served = decision.ordered[1]
    sentence = reason_for(decision, served)
    assert sentence == decision.reason.replace("us-east-1", "eu-west-1").replace(
        "at groq", "at mistral"
    )
