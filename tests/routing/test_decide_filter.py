"""The ordered hard filter (SPEC R-DEC-2) and the narrowing it reads (R-DEC-3, R-DEC-4, D-4,
D-6, D-7, D-13): each step rejects with its literal reason, an endpoint failing two steps
reports the earlier one, and a request only ever narrows its policy."""

from itertools import permutations

import pytest

from routing.engine.filters import FILTERS, REQUEST_INDEPENDENT, first_rejection
from routing.engine.policy import NOTHING, effective_policy
from routing.engine.types import Reason
from tests.routing.builders import ids, make_endpoint, make_policy, make_request, route

# The contract's steps (R-DEC-2), earliest first; the capability step has two reasons.
CONTRACT_ORDER = (
    {Reason.CATALOG_ONLY}, {Reason.STATUS_NOT_SERVING}, {Reason.SOVEREIGNTY_NOT_ALLOWED},
    {Reason.DATA_CLASS_NOT_CLEARED}, {Reason.REGION_NOT_ALLOWED},
    {Reason.CANNOT_GENERATE_TEXT, Reason.CANNOT_EMBED},
    {Reason.PROVIDER_DENIED}, {Reason.PROVIDER_IGNORED}, {Reason.PROVIDER_NOT_ALLOWED},
    {Reason.PROVIDER_NOT_IN_ONLY}, {Reason.PROVIDER_NOT_IN_ORDER}, {Reason.MODEL_DENIED},
    {Reason.MODEL_NOT_ALLOWED}, {Reason.PARTNER_DISABLED}, {Reason.NO_VISION},
    {Reason.CONTEXT_TOO_SMALL}, {Reason.PRICE_ABOVE_CAP},
)  # fmt: skip
STEP_OF = {reason: step for step, reasons in enumerate(CONTRACT_ORDER) for reason in reasons}

# (case, endpoint fields, request fields, policy fields, expected reason). The base endpoint
# is prov-a's eu-hosted meta/llama-3.3-70b in eu-west-1, text+tools, 8192 tokens, $1/$2.
STEPS = [
    ("catalog only", {"status": "catalog_only"}, {}, {}, Reason.CATALOG_ONLY),
    ("disabled", {"status": "disabled"}, {}, {}, Reason.STATUS_NOT_SERVING),
    ("policy residency", {"sovereignty_class": "any"}, {}, {"allowed_residency": ["eu-hosted"]},
     Reason.SOVEREIGNTY_NOT_ALLOWED),
    ("request residency", {}, {"residency": "eu-owned"}, {}, Reason.SOVEREIGNTY_NOT_ALLOWED),
    ("data class not cleared", {"data_classes": ["public"]}, {"data_class": "internal"}, {},
     Reason.DATA_CLASS_NOT_CLEARED),
    ("policy region", {"region": "us-east-1"}, {}, {"allowed_regions": ["eu-west-1"]},
     Reason.REGION_NOT_ALLOWED),
    ("request region", {}, {"provider": {"regions": ["eu-central-1"]}}, {},
     Reason.REGION_NOT_ALLOWED),
    ("no text", {"capabilities": ["embedding"]}, {}, {}, Reason.CANNOT_GENERATE_TEXT),
    ("no embedding", {}, {"operation": "embeddings"}, {}, Reason.CANNOT_EMBED),
    ("provider denied", {}, {}, {"provider_deny": ["prov-a"]}, Reason.PROVIDER_DENIED),
    ("provider ignored", {}, {"provider": {"ignore": ["prov-a"]}}, {}, Reason.PROVIDER_IGNORED),
    ("provider not allowed", {}, {}, {"provider_allow": ["prov-b"]}, Reason.PROVIDER_NOT_ALLOWED),
    ("provider not in only", {}, {"provider": {"only": ["prov-b"]}}, {},
     Reason.PROVIDER_NOT_IN_ONLY),
    ("other provider pinned", {}, {"pinned_provider": "prov-b"}, {}, Reason.PROVIDER_NOT_IN_ONLY),
    ("no fallbacks outside order", {},
     {"provider": {"order": ["prov-b"], "allow_fallbacks": False}}, {},
     Reason.PROVIDER_NOT_IN_ORDER),
    ("model denied", {}, {}, {"model_deny": ["meta/llama-3.3-70b"]}, Reason.MODEL_DENIED),
    ("model not allowed", {}, {}, {"model_allow": ["x/y"]}, Reason.MODEL_NOT_ALLOWED),
    ("partner", {"partner": True}, {}, {"partners": False}, Reason.PARTNER_DISABLED),
    ("vision", {}, {"has_image": True}, {}, Reason.NO_VISION),
    ("context", {"context_window": 100}, {"input_tokens": 90, "output_tokens": 20}, {},
     Reason.CONTEXT_TOO_SMALL),
    ("policy price", {"price_output": 20.0}, {}, {"max_price_completion": 15.0},
     Reason.PRICE_ABOVE_CAP),
    ("request price", {}, {"provider": {"max_price_prompt": 0.5}}, {}, Reason.PRICE_ABOVE_CAP),
]  # fmt: skip


def _merged(first: dict, second: dict) -> dict | None:
    """Both rows' fields, or None when they set the same field (no endpoint fails both)."""
    if first.keys() & second.keys() - {"provider"}:
        return None
    merged = {**first, **second}
    if "provider" in first and "provider" in second:
        if first["provider"].keys() & second["provider"].keys():
            return None
        merged["provider"] = {**first["provider"], **second["provider"]}
    return merged


@pytest.mark.parametrize(("_case", "endpoint", "request_", "policy", "expected"), STEPS)
def test_r_dec_2_each_step_rejects_with_its_reason(_case, endpoint, request_, policy, expected):
    # when
    decision = route([make_endpoint(**endpoint)], make_request(**request_), make_policy(**policy))
    # then
    assert decision.ordered == ()
    assert decision.rejected == (("ep-a", expected),)


def test_r_dec_2_there_is_one_check_per_contract_step():
    assert len(FILTERS) == len(CONTRACT_ORDER) == 17


def test_r_dec_2_an_endpoint_failing_two_steps_reports_the_earlier():
    checked = 0
    for earlier, later in permutations(STEPS, 2):
        if STEP_OF[earlier[4]] >= STEP_OF[later[4]]:
            continue
        # given an endpoint that fails both steps
        parts = [_merged(earlier[i], later[i]) for i in (1, 2, 3)]
        if None in parts:
            continue  # the rows set the same field
        endpoint, request, policy = parts
        # when
        decision = route(
            [make_endpoint(**endpoint)], make_request(**request), make_policy(**policy)
        )
        # then the earlier reason is the one recorded
        assert decision.rejected == (("ep-a", earlier[4]),), (earlier[0], later[0])
        checked += 1
    assert checked == 225  # every ordered pair but catalog-only × disabled (one field)


def test_r_api_1_embeddings_need_an_embedding_capable_endpoint():
    # given
    chat_only = make_endpoint(id="chat", capabilities=["text"])
    embedder = make_endpoint(id="emb", capabilities=["embedding"])
    # when
    decision = route([chat_only, embedder], make_request(operation="embeddings"))
    # then
    assert ids(decision) == ["emb"]
    assert decision.rejected == (("chat", Reason.CANNOT_EMBED),)


def test_d_7_request_independent_checks_ignore_what_the_request_sends():
    # given an endpoint only this request's needs reject (image, context, price)
    endpoint = make_endpoint(context_window=100)
    request = make_request(has_image=True, input_tokens=500, provider={"max_price_prompt": 0.1})
    # when
    full = first_rejection(endpoint, request, make_policy())
    listed = first_rejection(endpoint, request, make_policy(), checks=REQUEST_INDEPENDENT)
    # then
    assert full is Reason.NO_VISION
    assert listed is None


def test_d_7_request_independent_checks_keep_the_policy_steps():
    # given
    partner = make_endpoint(partner=True)
    # when
    reason = first_rejection(partner, make_request(), make_policy(), checks=REQUEST_INDEPENDENT)
    # then
    assert reason is Reason.PARTNER_DISABLED


def test_r_dec_4_request_narrows_residency_inside_the_policy():
    # given a policy allowing EU-owned and EU-hosted endpoints
    policy = make_policy(allowed_residency=["eu-owned", "eu-hosted"])
    owned = make_endpoint(id="owned", sovereignty_class="eu-owned")
    hosted = make_endpoint(id="hosted", sovereignty_class="eu-hosted")
    request = make_request(residency="eu-owned")
    # when
    narrowed, notes = effective_policy(policy, request)
    decision = route([owned, hosted], request, policy)
    # then
    assert narrowed.allowed_residency == frozenset({"eu-owned"})
    assert notes == ()
    assert ids(decision) == ["owned"]
    assert decision.rejected == (("hosted", Reason.SOVEREIGNTY_NOT_ALLOWED),)


def test_d_4_a_wider_residency_is_narrowed_to_the_policy_and_the_trace_says_so():
    # given
    policy = make_policy(allowed_residency=["eu-owned", "eu-hosted"])
    anywhere = make_endpoint(id="anywhere", sovereignty_class="any")
    hosted = make_endpoint(id="hosted")
    # when
    decision = route([anywhere, hosted], make_request(residency="any"), policy)
    # then
    assert ids(decision) == ["hosted"]
    assert decision.rejected == (("anywhere", Reason.SOVEREIGNTY_NOT_ALLOWED),)
    assert decision.notes == (
        "Requested residency any is wider than the policy; narrowed to eu-hosted, eu-owned.",
    )
    assert "with residency eu-hosted" in decision.reason


def test_r_dec_3_d_4_a_disjoint_residency_leaves_nothing_the_same_way_every_time():
    # given a policy of EU-hosted endpoints only and a request for EU-owned ones
    policy = make_policy(allowed_residency=["eu-hosted"])
    endpoints = [make_endpoint(id="a"), make_endpoint(id="b", sovereignty_class="any")]
    request = make_request(residency="eu-owned")
    # when
    first, again = route(endpoints, request, policy, seed=1), route(endpoints, request, policy)
    # then
    assert effective_policy(policy, request)[0].allowed_residency == NOTHING
    assert first.ordered == ()
    assert first.rejected == (
        ("a", Reason.SOVEREIGNTY_NOT_ALLOWED),
        ("b", Reason.SOVEREIGNTY_NOT_ALLOWED),
    )
    assert first.reason == (
        "No endpoint of meta/llama-3.3-70b is allowed for a general task with residency "
        "eu-owned under this workspace's policy; 2 endpoints excluded (most often "
        "sovereignty_not_allowed), "
        "partner endpoints not allowed."
    )
    assert first.notes == (
        "Requested residency eu-owned is outside the policy's eu-hosted; no endpoint can qualify.",
    )
    assert (again.rejected, again.reason) == (first.rejected, first.reason)


@pytest.mark.parametrize(
    ("_case", "allowed", "expected"),
    [
        ("no restriction", [], "any"),
        ("every class EU-hosted", ["eu-owned", "eu-hosted"], "eu-hosted"),
        ("EU-owned only", ["eu-owned"], "eu-hosted"),
        ("some class outside the EU", ["eu-owned", "any"], "any"),
    ],
)
def test_r_dec_4_a_request_naming_no_residency_gets_the_policys_own(_case, allowed, expected):
    # given
    endpoint = make_endpoint(sovereignty_class="eu-owned")
    # when
    decision = route([endpoint], make_request(), make_policy(allowed_residency=allowed))
    # then
    assert f"with residency {expected} to" in decision.reason


@pytest.mark.parametrize(
    ("_case", "policy_caps", "request_caps", "expected"),
    [
        ("request lowers the prompt cap", {}, {"max_price_prompt": 0.5}, (0.5, None)),
        ("lower of both sides", {"max_price_prompt": 0.8, "max_price_completion": 3.0},
         {"max_price_prompt": 0.9, "max_price_completion": 2.5}, (0.8, 2.5)),
        ("request cannot raise", {"max_price_completion": 1.5},
         {"max_price_completion": 20.0}, (None, 1.5)),
    ],
)  # fmt: skip
def test_d_6_request_price_caps_only_lower_the_policys(_case, policy_caps, request_caps, expected):
    # when
    narrowed, _notes = effective_policy(
        make_policy(**policy_caps), make_request(provider=request_caps)
    )
    # then
    assert (narrowed.max_price_prompt, narrowed.max_price_completion) == expected


@pytest.mark.parametrize(
    ("_case", "caps", "expected"),
    [
        ("both within", {"max_price_prompt": 1.0, "max_price_completion": 2.0}, ()),
        ("prompt over", {"max_price_prompt": 0.9}, (("ep-a", Reason.PRICE_ABOVE_CAP),)),
        ("completion over", {"max_price_completion": 1.9}, (("ep-a", Reason.PRICE_ABOVE_CAP),)),
    ],
)
def test_d_6_either_price_over_its_cap_fails(_case, caps, expected):
    # when
    decision = route([make_endpoint()], make_request(provider=caps))
    # then
    assert decision.rejected == expected


def test_d_6_a_request_cap_above_the_policy_is_noted_and_ignored():
    # when
    decision = route(
        [make_endpoint(price_output=2.0)],
        make_request(provider={"max_price_completion": 20.0}),
        make_policy(max_price_completion=1.5),
    )
    # then
    assert decision.rejected == (("ep-a", Reason.PRICE_ABOVE_CAP),)
    assert decision.notes == (
        "Requested max completion price 20 is above the policy's 1.5 USD/1M; "
        "the policy's cap applies.",
    )


@pytest.mark.parametrize(
    ("_case", "policy_regions", "request_regions", "expected"),
    [
        ("request pins inside an open policy", [], ["eu-west-1"], frozenset({"eu-west-1"})),
        ("intersection", ["eu-west-1", "eu-central-1"], ["eu-west-1", "us-east-1"],
         frozenset({"eu-west-1"})),
        ("disjoint leaves nothing", ["eu-west-1"], ["us-east-1"], NOTHING),
        ("no request regions", ["eu-west-1"], [], frozenset({"eu-west-1"})),
    ],
)  # fmt: skip
def test_d_13_request_regions_only_narrow(_case, policy_regions, request_regions, expected):
    # when
    narrowed, _notes = effective_policy(
        make_policy(allowed_regions=policy_regions),
        make_request(provider={"regions": request_regions}),
    )
    # then
    assert narrowed.allowed_regions == expected


def test_r_dec_4_first_rejection_narrows_a_raw_policy_by_the_request():
    # given
    endpoint = make_endpoint(sovereignty_class="eu-hosted")
    request = make_request(residency="eu-owned")
    # when
    reason = first_rejection(endpoint, request, make_policy(), checks=REQUEST_INDEPENDENT)
    # then
    assert reason is Reason.SOVEREIGNTY_NOT_ALLOWED
