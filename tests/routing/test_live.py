"""Live metrics rollups (SPEC R-OBS-2, R-API-8 numbers; R-EXE-2's 3-errors-in-30-s health)."""

from routing.engine.live import LiveMetrics, Observation, rollup


def _ok(at: float, latency_ms: float, tps: float | None = None) -> Observation:
    return Observation(at=at, ok=True, latency_ms=latency_ms, tokens_per_s=tps)


def _error(at: float) -> Observation:
    return Observation(at=at, ok=False, latency_ms=None, tokens_per_s=None)


def test_rollup_percentiles_throughput_and_error_rate():
    # given 100 successes with latencies 1..100 ms and 25 errors
    observations = [_ok(0, float(ms), tps=50.0) for ms in range(1, 101)]
    observations += [_error(0) for _ in range(25)]
    # when
    stats = rollup(observations)
    # then
    assert (stats.latency_p50_ms, stats.latency_p90_ms, stats.latency_p99_ms) == (50, 90, 99)
    assert stats.throughput_tps == 50.0
    assert stats.error_rate == 0.2
    assert stats.samples == 125


def test_r_obs_2_window_is_five_minutes_rolling():
    live = LiveMetrics()
    live.observe("ep", "prov", _ok(at=0.0, latency_ms=900))
    live.observe("ep", "prov", _ok(at=200.0, latency_ms=100))
    assert live.state(now=250.0).stats["ep"].samples == 2
    # 301 s later the first observation has left the window
    assert live.state(now=301.5).stats["ep"].latency_p50_ms == 100
    assert "ep" not in live.state(now=600.0).stats


def test_r_exe_2_three_errors_within_30_s_make_an_endpoint_unhealthy():
    live = LiveMetrics()
    for at in (0.0, 10.0):
        live.observe("ep", "prov", _error(at))
    assert live.state(now=11.0).unhealthy == frozenset()
    live.observe("ep", "prov", _error(20.0))
    assert live.state(now=21.0).unhealthy == frozenset({"ep"})
    # 30 s after the first error it is healthy again
    assert live.state(now=31.0).unhealthy == frozenset()


def test_health_groups_by_provider_with_endpoints():
    live = LiveMetrics()
    live.observe("a-1", "a", _ok(0, 10))
    live.observe("a-2", "a", _ok(0, 30))
    live.observe("b-1", "b", _error(0))
    health = live.by_provider(now=1.0)
    assert health["a"]["samples"] == 2
    assert health["a"]["latency_ms"]["p50"] == 10
    assert set(health["a"]["endpoints"]) == {"a-1", "a-2"}
    assert health["b"]["error_rate"] == 1.0


def test_r_exe_4_429_and_geo_403_are_counted_apart_from_reliability():
    live = LiveMetrics()
    live.observe("ep", "prov", _ok(0, 10))
    for kind in ("rate_limited", "rate_limited", "geo", "rate_limited"):
        live.observe("ep", "prov", Observation(at=1, ok=False, latency_ms=None,
                                               tokens_per_s=None, kind=kind))  # fmt: skip
    stats = live.state(now=2.0).stats["ep"]
    assert stats.error_rate == 0.0
    assert (stats.rate_limited, stats.geo_blocked) == (3, 1)
    assert live.state(now=2.0).unhealthy == frozenset()  # four 429/403 are not ill health
