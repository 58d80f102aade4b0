"""The model chain (SPEC R-MOD-6, R-MOD-7, D-21): virtual models expanded over the state
passed in; the round-robin turns a chain uses are returned, never taken, so a dry run
shows the turn the next real request gets."""

from __future__ import annotations

import random
from dataclasses import dataclass

from routing.engine.adaptive import AdaptiveState
from routing.engine.chain import Catalog, ModelChain, TargetPins, model_chain
from routing.engine.types import LiveState
from tests.routing.builders import make_endpoint, make_request

TARGETS = (("model-a", 1.0), ("model-b", 1.0))


@dataclass(frozen=True)
class Virtual:
    slug: str
    strategy: str
    targets: tuple[tuple[str, float], ...] = TARGETS
    objective: str = "balanced"
    min_weight_fraction: float = 0.05


def _chain(model: str, catalog: Catalog, turns: dict[str, int], **request: object) -> ModelChain:
    return model_chain(
        make_request(model=model, **request), catalog, live=LiveState(),
        adaptive=AdaptiveState(), round_robin=turns, rng=random.Random(0),
    )  # fmt: skip


def test_r_mod_7_round_robin_order_follows_the_turn_passed_in_and_reports_it():
    # given a round-robin virtual model over two models
    catalog = Catalog(virtual={"rr": Virtual("rr", "round_robin")}, endpoints={})
    # when it is expanded at turn 0 and at turn 1
    first, second = _chain("rr", catalog, {}), _chain("rr", catalog, {"rr": 1})
    # then the order rotates with the turn and each chain says which turn it used
    assert first.models == ("model-a", "model-b")
    assert second.models == ("model-b", "model-a")
    assert first.turns == second.turns == ("rr",)


def test_d_21_expanding_takes_no_turn_so_the_same_state_gives_the_same_chain():
    # given a round-robin virtual model and the turns as the process holds them
    catalog = Catalog(virtual={"rr": Virtual("rr", "round_robin")}, endpoints={})
    turns = {"rr": 3}
    # when it is expanded three times (explain does this)
    chains = [_chain("rr", catalog, turns) for _ in range(3)]
    # then every expansion is the same and the turns passed in are untouched
    assert {c.models for c in chains} == {("model-b", "model-a")}
    assert turns == {"rr": 3}


def test_a_virtual_model_met_twice_in_one_chain_takes_consecutive_turns():
    # given a chain whose fallback names the same round-robin model again, nested in another
    catalog = Catalog(
        virtual={"rr": Virtual("rr", "round_robin"),
                 "outer": Virtual("outer", "round_robin", targets=(("rr", 1.0),))},
        endpoints={},
    )  # fmt: skip
    # when it is expanded
    chain = _chain("rr", catalog, {}, fallbacks=("outer",))
    # then both meetings used a turn of their own (0, then 1), once each in the chain
    assert chain.turns == ("rr", "outer", "rr")
    assert chain.models == ("model-a", "model-b")


def test_r_exe_3_a_target_whose_every_endpoint_cools_goes_after_the_others():
    # given a cost-ordered virtual model whose cheapest target is cooling
    cheap = make_endpoint(id="a-1", model="model-a", price_input=0.1, price_output=0.1)
    dear = make_endpoint(id="b-1", model="model-b", price_input=9.0, price_output=9.0)
    catalog = Catalog(virtual={"v": Virtual("v", "cost")},
                      endpoints={"model-a": (cheap,), "model-b": (dear,)})  # fmt: skip
    # when it is expanded with and without that cooldown
    chain = model_chain(
        make_request(model="v"), catalog, live=LiveState(cooling=frozenset({"a-1"})),
        adaptive=AdaptiveState(), round_robin={}, rng=random.Random(0),
    )  # fmt: skip
    warm = _chain("v", catalog, {})
    # then the cooling target is skipped while the other remains, and tried last
    assert warm.models == ("model-a", "model-b")
    assert chain.models == ("model-b", "model-a")


def test_r_exe_7_the_session_pin_puts_its_target_first():
    catalog = Catalog(virtual={"rr": Virtual("rr", "round_robin")}, endpoints={})
    chain = model_chain(
        make_request(model="rr"), catalog, live=LiveState(), adaptive=AdaptiveState(),
        round_robin={}, rng=random.Random(0), pins=TargetPins(kept={"rr": "model-b"}),
    )  # fmt: skip
    assert chain.models == ("model-b", "model-a")
    assert chain.pin_outcomes == ("honored",)


def test_the_auto_router_chain_is_one_undecided_model():
    catalog = Catalog(virtual={}, endpoints={})
    assert model_chain(
        make_request(auto=True), catalog, live=LiveState(), adaptive=AdaptiveState(),
        round_robin={}, rng=random.Random(0),
    ).models == (None,)  # fmt: skip
