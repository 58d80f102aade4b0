"""A key's scope: its preset and allowed models folded into its policy (SPEC R-PRE-1,
R-KEY-1, R-BEY-5). Pure: no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from routing.engine.key_scope import PresetView, allowed_names, key_policy, with_defaults
from routing.engine.policy import NOTHING
from routing.engine.types import PolicyView

NAMES = {  # spelling -> what it stands for
    "meta/llama-3.3-70b": ("meta/llama-3.3-70b",),
    "llama-3.3-70b": ("meta/llama-3.3-70b",),
    "mistral/mistral-large": ("mistral/mistral-large",),
    "fast": ("meta/llama-3.3-70b", "cheap-pair"),  # a virtual model
    "cheap-pair": ("mistral/mistral-small",),  # a virtual model named by another
    "mistral/mistral-small": ("mistral/mistral-small",),
}


def test_r_key_1_patterns_match_spellings_and_bring_what_they_stand_for() -> None:
    # when
    allowed = allowed_names([("fast",)], NAMES, NAMES)
    # then the virtual model's targets come along, through the nested virtual model
    assert allowed == {"fast", "meta/llama-3.3-70b", "cheap-pair", "mistral/mistral-small"}


def test_r_key_1_a_bare_name_pattern_allows_the_model_it_spells() -> None:
    assert allowed_names([("llama-*",)], NAMES, NAMES) == {"llama-3.3-70b", "meta/llama-3.3-70b"}


def test_r_pre_1_the_key_and_its_preset_both_apply() -> None:
    # when the key allows meta/* and mistral/*, its preset only mistral-large
    allowed = allowed_names([("meta/*", "mistral/*"), ("mistral/mistral-large",)], NAMES, NAMES)
    # then
    assert allowed == {"mistral/mistral-large"}


def test_no_patterns_restrict_nothing() -> None:
    assert allowed_names([(), ()], NAMES, NAMES) is None


def test_r_pre_1_the_preset_narrows_the_providers_of_the_policy() -> None:
    # given
    policy = PolicyView(provider_allow=frozenset({"groq", "mistral"}), provider_deny=frozenset())
    preset = PresetView("p", provider_allow=frozenset({"mistral", "openai"}),
                        provider_ignore=frozenset({"groq"}))  # fmt: skip
    # when
    narrowed = key_policy(policy, None, preset)
    # then
    assert narrowed.provider_allow == {"mistral"}
    assert narrowed.provider_deny == {"groq"}


def test_an_empty_intersection_allows_nothing_not_everything() -> None:
    # given a policy that allows only groq and a preset that allows only mistral
    policy = PolicyView(provider_allow=frozenset({"groq"}), model_allow=frozenset({"a/x"}))
    preset = PresetView("p", provider_allow=frozenset({"mistral"}))
    # when
    narrowed = key_policy(policy, frozenset({"b/y"}), preset)
    # then
    assert (narrowed.provider_allow, narrowed.model_allow) == (NOTHING, NOTHING)


def test_a_key_without_settings_keeps_its_workspace_policy_object() -> None:
    policy = PolicyView(provider_deny=frozenset({"groq"}))
    assert key_policy(policy, None, None) is policy


sets = st.frozensets(st.sampled_from(["a", "b", "c", "d"]))


@given(policy_allow=sets, preset_allow=sets, models=sets, policy_models=sets)
def test_r_bey_5_a_key_scope_never_widens_its_policy(
    policy_allow, preset_allow, models, policy_models
) -> None:
    # given
    policy = PolicyView(provider_allow=policy_allow, model_allow=policy_models)
    preset = PresetView("p", provider_allow=preset_allow)
    # when
    narrowed = key_policy(policy, models, preset)
    # then whatever the policy restricts stays restricted (empty = any)
    if policy_allow:
        assert narrowed.provider_allow <= policy_allow or narrowed.provider_allow == NOTHING
    if policy_models:
        assert narrowed.model_allow <= policy_models or narrowed.model_allow == NOTHING
    assert narrowed.provider_deny >= policy.provider_deny
    assert narrowed.model_allow  # a key with allowed models is never left unrestricted


def test_r_pre_1_defaults_fill_only_silent_fields() -> None:
    # given
    preset = PresetView("p", default_prompt="Be brief.", default_params={"temperature": 0.2,
                                                                         "top_p": 0.5})  # fmt: skip
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "top_p": 0.9}
    # when
    filled = with_defaults(body, preset)
    # then
    assert filled == {
        "model": "m", "temperature": 0.2, "top_p": 0.9,
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "hi"}],
    }  # fmt: skip
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # the request is not changed


def test_r_pre_1_a_request_with_a_system_or_developer_message_keeps_it_alone() -> None:
    preset = PresetView("p", default_prompt="Be brief.")
    for role in ("system", "developer"):
        body = {"messages": [{"role": role, "content": "x"}, {"role": "user", "content": "y"}]}
        assert with_defaults(body, preset)["messages"] == body["messages"]


def test_a_preset_without_defaults_returns_the_same_body() -> None:
    body = {"messages": []}
    assert with_defaults(body, PresetView("p")) is body
    assert with_defaults(body, None) is body
