"""The ordered filter (SPEC R-DEC-2): each step rejects with its literal reason, and an
endpoint failing two rules reports the earlier one."""

import pytest

from routing.decide import FILTERS, decide
from routing.types import Reason
from tests.routing.builders import make_endpoint, make_policy, make_request

# (case, endpoint fields, request fields, policy fields, expected reason) in contract order.
STEPS = [
    ("catalog only", {"status": "catalog_only"}, {}, {}, Reason.CATALOG_ONLY),
    ("disabled", {"status": "disabled"}, {}, {}, Reason.STATUS_NOT_SERVING),
    ("sovereignty", {"sovereignty_class": "any"}, {}, {"allowed_residency": ["eu-hosted"]},
     Reason.SOVEREIGNTY_NOT_ALLOWED),
    ("region", {"region": "us-east-1"}, {}, {"allowed_regions": ["eu-west-1"]},
     Reason.REGION_NOT_ALLOWED),
    ("no text", {"capabilities": ["embedding"]}, {}, {}, Reason.CANNOT_GENERATE_TEXT),
    ("provider denied", {}, {}, {"provider_deny": ["prov-a"]}, Reason.PROVIDER_DENIED),
    ("provider not allowed", {}, {}, {"provider_allow": ["prov-b"]}, Reason.PROVIDER_NOT_ALLOWED),
    ("model denied", {}, {}, {"model_deny": ["meta/llama-3.3-70b"]}, Reason.MODEL_DENIED),
    ("model not allowed", {}, {}, {"model_allow": ["x/y"]}, Reason.MODEL_NOT_ALLOWED),
    ("partner", {"partner": True}, {}, {"partners": False}, Reason.PARTNER_DISABLED),
    ("vision", {}, {"has_image": True}, {}, Reason.NO_VISION),
    ("context", {"context_window": 100}, {"input_tokens": 90, "output_tokens": 20}, {},
     Reason.CONTEXT_TOO_SMALL),
    ("price", {"price_output": 20.0}, {}, {"max_price_completion": 15.0}, Reason.PRICE_ABOVE_CAP),
]  # fmt: skip


@pytest.mark.parametrize(("_case", "endpoint", "request_", "policy", "expected"), STEPS)
def test_r_dec_2_each_step_rejects_with_its_reason(_case, endpoint, request_, policy, expected):
    # when
    decision = decide([make_endpoint(**endpoint)], make_request(**request_), make_policy(**policy))
    # then
    assert decision.ordered == ()
    assert decision.rejected == (("ep-a", expected),)


def test_r_dec_2_reasons_are_checked_in_contract_order():
    assert len(FILTERS) == len(STEPS)
    for earlier in range(len(STEPS)):
        for later in range(earlier + 1, len(STEPS)):
            # given an endpoint that fails both steps
            fields = {**STEPS[earlier][1], **STEPS[later][1]}
            if STEPS[earlier][1].keys() & STEPS[later][1].keys():
                continue  # the two steps test the same field; no endpoint fails both
            request = {**STEPS[earlier][2], **STEPS[later][2]}
            policy = {**STEPS[earlier][3], **STEPS[later][3]}
            if STEPS[later][4] is Reason.NO_VISION:
                fields.setdefault("capabilities", ["text"])
            # when
            decision = decide([make_endpoint(**fields)], make_request(**request),
                              make_policy(**policy))  # fmt: skip
            # then the earlier reason is the one recorded
            assert decision.rejected == (("ep-a", STEPS[earlier][4]),), (earlier, later)


def test_embeddings_need_an_embedding_capable_endpoint():
    chat_only = make_endpoint(id="chat", capabilities=["text"])
    embedder = make_endpoint(id="emb", capabilities=["embedding"])
    decision = decide([chat_only, embedder], make_request(operation="embeddings"), make_policy())
    assert [e.id for e in decision.ordered] == ["emb"]
    assert decision.rejected == (("chat", Reason.CANNOT_EMBED),)


def test_foundation_orders_survivors_cheapest_first_then_by_id():
    endpoints = [
        make_endpoint(id="dear", price_input=5.0, price_output=5.0),
        make_endpoint(id="b-cheap", price_input=0.5, price_output=0.5),
        make_endpoint(id="a-cheap", price_input=0.5, price_output=0.5),
    ]
    decision = decide(endpoints, make_request(), make_policy())
    assert [e.id for e in decision.ordered] == ["a-cheap", "b-cheap", "dear"]
