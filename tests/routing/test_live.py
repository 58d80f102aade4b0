"""Live metrics rollups (SPEC R-OBS-2, R-API-8 numbers; R-EXE-2's 3-errors-in-30-s health),
per endpoint and per workspace's own credential (R-BEY-7)."""

from routing.engine.live import Fleet, LiveMetrics, Observation, credential_series, rollup
from routing.engine.live_slices import Slice, merge_slices
from routing.engine.live_window import bucket_of, bucket_value

CREDENTIAL = credential_series(12, "anthropic")


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


def _fleet_of(*workers: tuple[str, LiveMetrics], now: float) -> dict[str, Fleet]:
    """Each worker hands in its slice; the rollup of all of them, as each worker reads it."""
    slices = []
    for name, live in workers:
        _since, upto, windows = live.take_slice()
        slices.append(Slice(name, now, upto, windows))
    windows, included = merge_slices(slices)
    return {name: Fleet(windows, included.get(name), at=now) for name, _live in workers}


def test_r_obs_2_each_worker_reads_every_workers_traffic_once_and_its_own_new_at_once():
    a, b = LiveMetrics(), LiveMetrics()
    for n in range(6):
        a.observe("ep", "prov", _ok(at=1.0 + n, latency_ms=100))
    for n in range(4):
        b.observe("ep", "prov", _ok(at=1.0 + n, latency_ms=1000))
    fleets = _fleet_of(("a", a), ("b", b), now=10.0)
    a.set_fleet(fleets["a"])
    b.set_fleet(fleets["b"])
    # both see all ten (none twice), latency p50 from both
    for live in (a, b):
        assert live.state(now=10.5).stats["ep"].samples == 10
        assert live.by_provider(now=10.5)["prov"]["requests"] == 10
    # a's new observation after the slice counts at once for a, and for b after the next
    a.observe("ep", "prov", _error(at=11.0))
    assert a.state(now=12.0).stats["ep"].samples == 11
    assert b.state(now=12.0).stats["ep"].samples == 10


def test_r_obs_2_a_slice_that_never_reached_the_rollup_goes_in_the_next_one():
    live = LiveMetrics()
    live.observe("ep", "prov", _ok(at=1.0, latency_ms=10))
    since, _upto, windows = live.take_slice()
    live.give_back_slice(since)  # the store was away
    live.observe("ep", "prov", _ok(at=3.0, latency_ms=10))
    _since, _upto, windows = live.take_slice()
    assert windows["ep"][1].samples == 2


def test_r_obs_2_an_observation_stamped_before_the_last_slice_still_goes_in_the_next():
    # a long request: started (its stamp) before a tick, recorded after it
    live = LiveMetrics()
    live.observe("ep", "prov", _ok(at=5.0, latency_ms=10))
    live.take_slice()
    live.observe("ep", "prov", _ok(at=1.0, latency_ms=4000))
    _since, _upto, windows = live.take_slice()
    assert windows["ep"][1].samples == 1


def test_r_obs_2_a_stale_rollup_is_set_aside_for_the_workers_own_window():
    live = LiveMetrics(fleet_stale_s=10)
    other = LiveMetrics()
    other.observe("ep", "prov", _ok(at=1.0, latency_ms=10))
    rolled = _fleet_of(("other", other), now=2.0)["other"]
    live.set_fleet(Fleet(rolled.windows, mine_seq=None, at=2.0))
    assert live.state(now=3.0).stats["ep"].samples == 1
    assert "ep" not in live.state(now=20.0).stats  # the rollup stopped: own window (empty)


def test_r_bey_7_a_credentials_series_is_named_by_workspace_and_provider():
    assert credential_series(12, "anthropic") == "ws:12/anthropic"


def test_r_obs_2_a_credential_series_rolls_up_this_workers_attempts_exactly():
    # given a credential's attempts: three answered, one refused, one rate-limited, one stream
    live = LiveMetrics()
    rate_limited = Observation(at=2.0, ok=False, latency_ms=None, tokens_per_s=None,
                               kind="rate_limited")  # fmt: skip
    stream = Observation(at=3.0, ok=True, latency_ms=50.0, tokens_per_s=None, streamed=True)
    attempts = [_ok(at=1.0, latency_ms=ms) for ms in (100.0, 200.0, 300.0)]
    for attempt in (*attempts, _error(at=2.0), rate_limited, stream):
        live.observe(CREDENTIAL, "anthropic", attempt)
    # when its numbers and another credential's (no attempt) are read
    found = live.series_stats([CREDENTIAL, "ws:13/anthropic"], now=10.0)
    # then only it, exact (nearest rank; a 429 is no error, R-EXE-4)
    assert list(found) == [CREDENTIAL]
    stats = found[CREDENTIAL].stats
    assert (stats.samples, stats.error_rate, stats.rate_limited) == (6, 1 / 6, 1)
    assert (stats.latency_p50_ms, stats.latency_p99_ms) == (100.0, 300.0)
    assert found[CREDENTIAL].ttft_ms == (bucket_value(bucket_of(50.0)),) * 3
    # and five minutes later it has left the window
    assert live.series_stats([CREDENTIAL], now=304.0) == {}


def test_r_obs_2_a_credential_series_counts_every_workers_attempts_once():
    # given two workers' attempts with one credential, rolled up
    a, b = LiveMetrics(), LiveMetrics()
    for n in range(3):
        a.observe(CREDENTIAL, "anthropic", _error(at=1.0 + n))
    b.observe(CREDENTIAL, "anthropic", _ok(at=1.0, latency_ms=100))
    fleets = _fleet_of(("a", a), ("b", b), now=10.0)
    a.set_fleet(fleets["a"])
    b.set_fleet(fleets["b"])
    # when a's credential fails once more after the rollup
    a.observe(CREDENTIAL, "anthropic", _error(at=11.0))
    # then a counts all five at once, b the four of the rollup until the next one
    mine, theirs = (w.series_stats([CREDENTIAL], now=12.0)[CREDENTIAL].stats for w in (a, b))
    assert (mine.samples, mine.error_rate) == (5, 0.8)
    assert (theirs.samples, theirs.error_rate) == (4, 0.75)
