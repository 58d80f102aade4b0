"""Virtual-model target ordering (SPEC R-MOD-7): round_robin, cost, weighted_random, and
adaptive standing in as weighted_random until the resilience issue."""

import random
from collections import Counter

import pytest

from routing.engine.virtual import ADAPTIVE_NOTE, order_targets, strategy_note

TARGETS = (("acme/a", 1.0), ("acme/b", 3.0), ("acme/c", 0.0), ("acme/d", 4.0))


def _order(strategy: str, *, seed: int = 0, counter: int = 0, prices=None):
    return order_targets(
        strategy, TARGETS, cheapest_price=prices or {}, rng=random.Random(seed), counter=counter
    )


@pytest.mark.parametrize(
    ("counter", "expected"),
    [
        (0, ("acme/a", "acme/b", "acme/c", "acme/d")),
        (1, ("acme/b", "acme/c", "acme/d", "acme/a")),
        (6, ("acme/c", "acme/d", "acme/a", "acme/b")),
    ],
)
def test_r_mod_7_round_robin_rotates_by_the_callers_counter(counter, expected):
    assert _order("round_robin", counter=counter) == expected


def test_r_mod_7_round_robin_of_no_targets_is_empty():
    assert (
        order_targets("round_robin", (), cheapest_price={}, rng=random.Random(0), counter=5) == ()
    )


def test_r_mod_7_cost_orders_by_cheapest_price_then_slug_unknown_last():
    # given d and b cost the same; a has no known price
    prices = {"acme/b": 0.5, "acme/c": 2.0, "acme/d": 0.5}
    # when
    ordered = _order("cost", prices=prices)
    # then
    assert ordered == ("acme/b", "acme/d", "acme/c", "acme/a")


def test_r_mod_7_weighted_random_draws_first_in_proportion_to_weight():
    # given weights 1, 3, 0, 4 (total 8)
    seeds = range(4000)
    # when
    firsts = Counter(_order("weighted_random", seed=seed)[0] for seed in seeds)
    # then
    assert abs(firsts["acme/a"] / 4000 - 1 / 8) < 0.03
    assert abs(firsts["acme/b"] / 4000 - 3 / 8) < 0.03
    assert abs(firsts["acme/d"] / 4000 - 4 / 8) < 0.03
    assert firsts["acme/c"] == 0


def test_r_mod_7_weighted_random_returns_every_target_once_zero_weights_last():
    for seed in range(50):
        ordered = _order("weighted_random", seed=seed)
        assert sorted(ordered) == ["acme/a", "acme/b", "acme/c", "acme/d"]
        assert ordered[-1] == "acme/c"


def test_r_mod_7_adaptive_orders_as_weighted_random_for_now_and_says_so():
    for seed in range(20):
        assert _order("adaptive", seed=seed) == _order("weighted_random", seed=seed)
    assert strategy_note("adaptive") == ADAPTIVE_NOTE
    assert strategy_note("cost") is None


def test_r_mod_7_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown virtual-model strategy 'fastest'"):
        _order("fastest")


def test_r_exe_3_a_virtual_target_in_cooldown_is_tried_after_every_other():
    from routing.engine.virtual import arrange_targets

    order, _ = arrange_targets(["a", "b", "c"], cooling=frozenset({"a"}), unhealthy=frozenset())
    assert order == ("b", "c", "a")
    # after the unhealthy ones too
    order, _ = arrange_targets(["a", "b", "c"], cooling=frozenset({"a"}),
                               unhealthy=frozenset({"b"}))  # fmt: skip
    assert order == ("c", "b", "a")
    # every target cooling: all kept, trying beats refusing
    order, _ = arrange_targets(["a", "b"], cooling=frozenset({"a", "b"}), unhealthy=frozenset())
    assert order == ("a", "b")


def test_r_exe_2_an_unhealthy_virtual_target_is_tried_last_not_dropped():
    from routing.engine.virtual import arrange_targets

    order, _ = arrange_targets(["a", "b", "c"], cooling=frozenset(), unhealthy=frozenset({"a"}))
    assert order == ("b", "c", "a")


def test_r_exe_7_a_session_stays_on_its_virtual_target_until_it_cools_down():
    from routing.engine.virtual import arrange_targets

    calm = {"cooling": frozenset(), "unhealthy": frozenset()}
    assert arrange_targets(["a", "b", "c"], pinned="c", **calm) == (("c", "a", "b"), "honored")
    cooling = {"cooling": frozenset({"c"}), "unhealthy": frozenset()}
    assert arrange_targets(["a", "b", "c"], pinned="c", **cooling) == (("a", "b", "c"), "released")
    assert arrange_targets(["a"], pinned="a", **calm) == (("a",), None)
