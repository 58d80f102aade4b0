"""Which of a key's routes handles a request, and a deployed route that no longer validates
(SPEC D-23; gateway/request_path/resolve/routes.py): the first deployed route in the key's order
whose `models` match handles it; a broken one before it, or anywhere when none matches,
refuses the request with 503 `route_unavailable` — it might have been the one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from budgets.rules.route_usage import NO_USAGE
from gateway.errors import ApiError
from gateway.request_path.resolve.routes import route_request
from gateway.state.request_state import Effects
from gateway.state.snapshot_types import DeployedRoute
from routing.engine.routes import ModelNode, Route, RouteFacts

MODEL = "acme/a"


def _deployed(slug: str, patterns: tuple[str, ...], version: int = 1) -> DeployedRoute:
    route = Route(slug, "m", {"m": ModelNode("m", MODEL)}, models=patterns)
    return DeployedRoute(slug, version, route)


BROKEN = DeployedRoute("broken", 3, None, "model `acme/gone` is no longer in the catalog")


def _route(attached: tuple[str, ...], deployed: list[DeployedRoute], requested: str):
    caller = SimpleNamespace(
        key=SimpleNamespace(pk=1, routes=attached),
        workspace=SimpleNamespace(routes={entry.slug: entry for entry in deployed}),
    )
    facts = RouteFacts(operation="chat.completions", requested_model=requested, key_id=1, seed=0)
    state = SimpleNamespace(usage=NO_USAGE, now=0.0)
    body = {"model": requested}
    _, choice = route_request(caller, body, facts, state, Effects())  # type: ignore[arg-type]
    return None if choice is None else (choice.slug, choice.version)


def test_d_23_the_first_deployed_route_in_the_keys_order_that_matches_handles_it():
    deployed = [_deployed("other", ("b-*",)), _deployed("first", ("a-*",), 4),
                _deployed("second", ("*",))]  # fmt: skip
    assert _route(("never-deployed", "other", "first", "second"), deployed, "a-1") == ("first", 4)
    assert _route(("other", "first", "second"), deployed, "c-1") == ("second", 1)
    assert _route(("other",), deployed, "c-1") is None  # resolved as usual


def test_d_23_a_broken_route_after_the_one_that_handles_it_is_not_in_the_way():
    deployed = [_deployed("good", ("a-*",)), BROKEN]
    assert _route(("good", "broken"), deployed, "a-1") == ("good", 1)


@pytest.mark.parametrize(
    ("attached", "requested"),
    [(("broken", "good"), "a-1"),  # before the route that handles it
     (("good", "broken"), "z-1")],  # none handles it: the broken one might have
)  # fmt: skip
def test_d_23_a_broken_route_that_might_have_handled_it_refuses_with_503(attached, requested):
    with pytest.raises(ApiError) as refused:
        _route(attached, [_deployed("good", ("a-*",)), BROKEN], requested)
    assert (refused.value.status, refused.value.code) == (503, "route_unavailable")
    assert "Route `broken` cannot be used: model `acme/gone`" in refused.value.message
