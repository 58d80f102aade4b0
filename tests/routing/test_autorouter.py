"""Auto-router workspace settings (SPEC R-AUTO-1)."""

import random

import pytest

from routing.engine.auto.settings import (
    SPEND_PROFILES,
    auto_settings,
    first_model_only,
    narrow_for_auto,
)
from routing.engine.decide import decide
from routing.engine.types import LiveState, Reason
from tests.routing.builders import make_endpoint, make_policy, make_request

CATALOG = [
    make_endpoint(id="haiku", model="anthropic/claude-haiku", price_input=0.25, price_output=1.25),
    make_endpoint(id="opus", model="anthropic/claude-opus", price_input=15.0, price_output=75.0),
    make_endpoint(id="gpt", model="openai/gpt-5.1", price_input=1.0, price_output=4.0),
    make_endpoint(id="mini", model="openai/gpt-5-mini", price_input=0.05, price_output=0.4),
]
MODELS = [e.model for e in CATALOG]


def _auto(raw: dict, policy=None):
    settings = auto_settings(raw)
    narrowed = narrow_for_auto(policy or make_policy(), settings, MODELS)
    return decide(CATALOG, make_request(auto=True), narrowed, LiveState(), random.Random(0), 0.0)


@pytest.mark.parametrize(
    ("profile", "survivors"),
    [
        ("economy", {"mini"}),
        ("standard", {"haiku", "mini"}),
        ("premium", {"haiku", "gpt", "mini"}),
        ("any", {"haiku", "gpt", "mini", "opus"}),
        ({"input": 2, "output": 5}, {"haiku", "gpt", "mini"}),
    ],
)
def test_r_auto_1_spend_profile_caps_filter_before_scoring(profile, survivors):
    decision = _auto({"spend_profile": profile})
    assert {e.id for e in decision.ordered} == survivors
    assert all(reason is Reason.PRICE_ABOVE_CAP for _id, reason in decision.rejected)


def test_r_auto_1_spend_profiles_are_the_published_caps():
    assert SPEND_PROFILES == {"economy": (0.10, 0.50), "standard": (0.30, 1.50),
                              "premium": (1.0, 5.0), "any": (None, None)}  # fmt: skip


def test_r_auto_1_allowed_patterns_and_exact_ids():
    decision = _auto({"allowed_models": ["anthropic/*", "openai/gpt-5.*"]})
    assert {e.id for e in decision.ordered} == {"haiku", "opus", "gpt"}
    assert dict(decision.rejected) == {"mini": Reason.MODEL_NOT_ALLOWED}


def test_r_auto_1_patterns_never_widen_the_policy_allow_list():
    policy = make_policy(model_allow=["openai/gpt-5-mini"])
    decision = _auto({"allowed_models": ["anthropic/*"]}, policy)
    assert decision.ordered == ()


def test_r_auto_1_the_cheaper_policy_cap_wins():
    policy = make_policy(max_price_prompt=0.1)
    decision = _auto({"spend_profile": "premium"}, policy)
    assert {e.id for e in decision.ordered} == {"mini"}


def test_r_auto_1_without_fallback_only_the_top_model_is_tried():
    endpoints = (CATALOG[0], CATALOG[2], CATALOG[0])
    assert first_model_only(endpoints) == (CATALOG[0], CATALOG[0])
    assert first_model_only(()) == ()
