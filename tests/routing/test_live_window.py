"""The mergeable live-metric window (SPEC R-OBS-2): percentiles read back from its
histogram stay within 4 % of the exact ones, windows merge by adding up, and JSON round
trips it exactly — what workers send the rollup and the rollup sends every router."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from routing.engine.live import Observation, rollup, window_of
from routing.engine.live_window import GROWTH, Window, merged

latencies = st.lists(st.floats(1.0, 120_000.0), min_size=1, max_size=200)
outcomes = st.lists(
    st.tuples(st.sampled_from(["ok", "error", "rate_limited", "geo"]), st.floats(1.0, 5000.0),
              st.booleans()),
    max_size=60,
)  # fmt: skip


def _observations(rows: list[tuple[str, float, bool]]) -> list[Observation]:
    return [
        Observation(at=0, ok=kind == "ok", latency_ms=ms if kind == "ok" else None,
                    tokens_per_s=None if streamed else 40.0, streamed=streamed,
                    kind="" if kind == "ok" else kind)
        for kind, ms, streamed in rows
    ]  # fmt: skip


@given(latencies, st.sampled_from([0.5, 0.9, 0.99]))
def test_r_obs_2_a_percentile_from_the_histogram_is_within_4_percent_of_the_exact_one(values, q):
    observations = [Observation(at=0, ok=True, latency_ms=v, tokens_per_s=None) for v in values]
    exact = {0.5: rollup(observations).latency_p50_ms, 0.9: rollup(observations).latency_p90_ms,
             0.99: rollup(observations).latency_p99_ms}[q]  # fmt: skip
    approx = {0.5: window_of(observations).stats().latency_p50_ms,
              0.9: window_of(observations).stats().latency_p90_ms,
              0.99: window_of(observations).stats().latency_p99_ms}[q]  # fmt: skip
    assert exact is not None
    assert approx is not None
    assert abs(math.log(approx / exact)) <= math.log(GROWTH) / 2 + 1e-9


@given(outcomes, outcomes)
def test_r_obs_2_two_workers_windows_merged_equal_one_window_of_all_their_observations(a, b):
    both = merged([window_of(_observations(a)), window_of(_observations(b))])
    assert both == window_of(_observations(a + b))
    stats = both.stats()
    assert stats.samples == len(a) + len(b)
    errors = sum(1 for kind, _ms, _s in a + b if kind == "error")
    assert stats.error_rate == (errors / (len(a) + len(b)) if a + b else None)


@given(outcomes)
def test_a_window_survives_its_json_unchanged(rows):
    window = window_of(_observations(rows))
    assert Window.from_json(window.to_json()) == window


def test_streams_feed_the_ttft_percentiles_and_non_streams_the_throughput():
    window = window_of(_observations([("ok", 100.0, True), ("ok", 1000.0, False)]))
    p50, _p90, _p99 = window.ttft_percentiles()
    assert p50 is not None
    assert abs(p50 - 100.0) / 100.0 < 0.04
    assert window.stats().throughput_tps == 40.0  # the non-stream's only
    assert (window.tps_count, window.ok) == (1, 2)
