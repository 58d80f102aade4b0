"""The error of a model chain none of whose models kept an endpoint (SPEC R-DEC-3, D-16;
gateway/request_path/decide.py): 400 `context_length_exceeded` naming the largest window
of the whole chain when size alone excluded every endpoint, else the 409. Pure."""

from __future__ import annotations

from gateway.request_path.decide import no_endpoint
from gateway.state.snapshot import Snapshot
from routing.engine.types import Decision, Reason
from tests.routing.builders import make_endpoint, make_request

SMALL = make_endpoint(id="w-64", model="m/small", context_window=64)
LARGER = make_endpoint(id="w-128", model="m/larger", context_window=128)
EU_ONLY = make_endpoint(id="eu", model="m/eu", context_window=1024)
SNAPSHOT = Snapshot(
    version=1, keys={}, workspaces={}, providers={}, models={}, names={},
    endpoints={"m/small": (SMALL,), "m/larger": (LARGER,), "m/eu": (EU_ONLY,)}, base_urls={},
)  # fmt: skip
REQUEST = make_request(input_tokens=500, output_tokens=0)


def _refused(*rejected: tuple[str, Reason]) -> Decision:
    return Decision(ordered=(), rejected=rejected, algorithm="filter", reason="Nothing fits.")


def test_d_16_a_chain_too_small_everywhere_names_the_largest_window_of_the_chain():
    # given a 128-token model, then a 64-token one, both refused for size alone
    chain = [_refused(("w-128", Reason.CONTEXT_TOO_SMALL)),
             _refused(("w-64", Reason.CONTEXT_TOO_SMALL))]  # fmt: skip
    # when
    error = no_endpoint(chain, REQUEST, SNAPSHOT)
    # then the 400 names the largest window on offer, not the last model's
    assert (error.status, error.code, error.param) == (400, "context_length_exceeded", "messages")
    assert "about 500 input tokens" in error.message
    assert "(128 tokens)" in error.message


def test_d_16_another_exclusion_anywhere_in_the_chain_keeps_the_409():
    # given the first model refused for its residency, the fallback for size alone
    residency = _refused(("eu", Reason.SOVEREIGNTY_NOT_ALLOWED))
    chain = [residency, _refused(("w-64", Reason.CONTEXT_TOO_SMALL))]
    # when
    error = no_endpoint(chain, REQUEST, SNAPSHOT)
    # then it is the 409, of the model that was refused for something else
    assert (error.status, error.code) == (409, "no_endpoint_for_policy")
    assert error.extra == {"excluded": [{"endpoint": "eu", "reason": "sovereignty_not_allowed"}]}
