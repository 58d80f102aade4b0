"""The adaptive strategy (SPEC R-EXE-5): peak-EWMA latency, in-flight load, P2C."""

import math
import random

from routing.engine.adaptive import (
    DECAY_S,
    MIN_WEIGHT_FRACTION,
    AdaptiveState,
    PeakEwma,
    p2c_order,
    shaped_weights,
)


def test_r_exe_5_peak_ewma_jumps_up_at_once_and_decays_with_time():
    ewma = PeakEwma()
    ewma.observe(100.0, now=0.0)
    ewma.observe(900.0, now=1.0)
    assert ewma.estimate_ms == 900.0  # a slowdown is believed immediately
    ewma.observe(100.0, now=1.0 + DECAY_S)
    keep = math.exp(-1.0)
    assert ewma.estimate_ms == 900.0 * keep + 100.0 * (1 - keep)  # recovery is gradual


def test_r_exe_5_load_is_estimate_times_in_flight_plus_one():
    state = AdaptiveState()
    state.started("a")
    state.finished("a", 50.0, now=0.0)
    state.started("a")
    state.started("a")
    assert state.load("a") == 50.0 * 3
    state.finished("a", None, now=1.0)  # a failed attempt leaves the estimate alone
    assert state.load("a") == 50.0 * 2


def test_r_exe_5_p2c_takes_the_lower_load_of_the_two_drawn():
    # with two targets both are always drawn, so the lighter one always comes first
    for seed in range(50):
        order = p2c_order(["slow", "fast"], [1.0, 1.0], {"slow": 900.0, "fast": 50.0},
                          random.Random(seed))  # fmt: skip
        assert order == ("fast", "slow")


def test_r_exe_5_p2c_spreads_by_weight_and_avoids_the_loaded_target():
    firsts = {"a": 0, "b": 0, "c": 0}
    loads = {"a": 100.0, "b": 100.0, "c": 1000.0}
    for seed in range(2000):
        firsts[p2c_order(["a", "b", "c"], [1.0, 1.0, 1.0], loads, random.Random(seed))[0]] += 1
    assert firsts["c"] == 0  # the loaded one only wins when drawn with itself, never
    assert 800 < firsts["a"] < 1200  # the equal ones share


def test_r_exe_5_min_weight_fraction_floor_except_in_cooldown():
    targets = [("big", 100.0), ("tiny", 0.001), ("cold", 0.001)]
    weights = shaped_weights(targets, objective="latency", price={}, error_rate={},
                             cooling=frozenset({"cold"}))  # fmt: skip
    assert weights == [100.0, 100.0 * MIN_WEIGHT_FRACTION, 0.001]


def test_r_exe_5_objective_decides_how_price_enters_the_weight():
    targets = [("cheap", 1.0), ("dear", 1.0)]
    price = {"cheap": 0.0, "dear": 1.0}
    latency = shaped_weights(targets, objective="latency", price=price, error_rate={},
                             cooling=frozenset())  # fmt: skip
    balanced = shaped_weights(targets, objective="balanced", price=price, error_rate={},
                              cooling=frozenset())  # fmt: skip
    cost = shaped_weights(targets, objective="cost", price=price, error_rate={},
                          cooling=frozenset())  # fmt: skip
    assert latency == [1.0, 1.0]
    assert balanced == [1.0, 0.25]
    assert cost == [1.0, 0.0625]


def test_r_exe_5_health_lowers_the_weight():
    weights = shaped_weights([("a", 1.0)], objective="latency", price={},
                             error_rate={"a": 0.5}, cooling=frozenset())  # fmt: skip
    assert weights == [0.5]
