"""A worker's pass of the live-metric sharing tick over one series (SPEC R-OBS-2, R-BEY-7):
a series with nothing to hand in and no rollup to read back (the credentials', where no
workspace brings its own key) rolls up nothing, yet still reads the rollup back, so other
workers' traffic reaches this worker."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gateway.state.live_sharing import WORKER_ID, share_series
from routing.engine.live import LiveMetrics, Observation, credential_series, window_of
from routing.engine.live_slices import Slice
from routing.live_models import EndpointStats, LiveSlice
from routing.rollup import CREDENTIALS, DatabaseSlices, fleet_of, roll_up

pytestmark = pytest.mark.django_db
NOW = 1_800_000_000.0
SERIES = credential_series(12, "anthropic")


@pytest.fixture(autouse=True)
def _no_broker(settings) -> None:
    settings.CELERY_BROKER_URL = ""  # each worker rolls up on its tick


def _pass(live: LiveMetrics, store: DatabaseSlices, now: float) -> list[str]:
    """This worker's pass over the series; the tables its queries touched, in order."""
    since, upto, windows = live.take_slice()
    with CaptureQueriesContext(connection) as queries:
        share_series(live, store, Slice(WORKER_ID, now, upto, windows), since, now)
    tables = (LiveSlice._meta.db_table, EndpointStats._meta.db_table)
    return [t for q in queries.captured_queries for t in tables if f'"{t}"' in q["sql"]]


def _other_worker_rolls_up(store: DatabaseSlices, now: float) -> None:
    window = window_of([Observation(at=now, ok=True, latency_ms=100.0, tokens_per_s=None)])
    store.push(Slice("other", now, 1, {SERIES: ("anthropic", window)}))
    roll_up(store, now)


def test_r_bey_7_a_quiet_series_skips_the_roll_up_but_reads_other_workers_rollup() -> None:
    # given a worker whose credential series handed in nothing and read nothing back
    live, store = LiveMetrics(fleet_stale_s=60), DatabaseSlices(fleet_of("test", CREDENTIALS))
    first = _pass(live, store, NOW)
    assert LiveSlice._meta.db_table in first  # the first pass rolls up: nothing known yet
    # when it passes again with nothing to hand in
    quiet = _pass(live, store, NOW + 5)
    # then the store is not touched, and the rollup is still read back
    assert quiet == [EndpointStats._meta.db_table]
    # and once another worker rolls its credential traffic up, this worker reads it
    _other_worker_rolls_up(store, NOW + 6)
    assert _pass(live, store, NOW + 10) == [EndpointStats._meta.db_table]
    assert live.series_stats([SERIES], NOW + 10)[SERIES].stats.samples == 1
    # and rolls up again on its next pass, so the row ages out when the traffic stops
    assert LiveSlice._meta.db_table in _pass(live, store, NOW + 15)


def test_r_bey_7_a_quiet_series_rolls_up_again_once_this_worker_has_a_slice() -> None:
    # given a quiet credential series
    live, store = LiveMetrics(fleet_stale_s=60), DatabaseSlices(fleet_of("test", CREDENTIALS))
    _pass(live, store, NOW)
    assert _pass(live, store, NOW + 5) == [EndpointStats._meta.db_table]
    # when this worker sees an attempt with a workspace's own key
    live.observe(SERIES, "anthropic", Observation(at=NOW + 6, ok=True, latency_ms=90.0,
                                                  tokens_per_s=None))  # fmt: skip
    touched = _pass(live, store, NOW + 10)
    # then its pass hands the slice in and rolls it up
    assert LiveSlice._meta.db_table in touched
    assert EndpointStats.objects.get(fleet=store.fleet).endpoint == SERIES


def _observed(live: LiveMetrics, at: float) -> None:
    live.observe(SERIES, "anthropic", Observation(at=at, ok=True, latency_ms=90.0,
                                                  tokens_per_s=None))  # fmt: skip


def test_r_obs_2_with_a_broker_a_worker_leaves_a_fresh_rollup_to_beat(settings) -> None:
    # given a broker, and beat's rollup one interval old
    settings.CELERY_BROKER_URL, settings.LIVE_ROLLUP_S = "redis://127.0.0.1:9/0", 5.0
    live, store = LiveMetrics(fleet_stale_s=60), DatabaseSlices(fleet_of("test", CREDENTIALS))
    _other_worker_rolls_up(store, NOW)
    _observed(live, NOW + 4)
    # when this worker hands its slice in
    touched = _pass(live, store, NOW + 5)
    # then it pushes and reads the rollup back, but does not roll up itself
    assert touched == [LiveSlice._meta.db_table, EndpointStats._meta.db_table]
    assert EndpointStats.objects.get(fleet=store.fleet).requests == 1


def test_r_obs_2_with_a_broker_a_worker_rolls_up_when_beats_rollup_is_overdue(settings) -> None:
    # given a broker whose beat last rolled up more than one and a half intervals ago
    settings.CELERY_BROKER_URL, settings.LIVE_ROLLUP_S = "redis://127.0.0.1:9/0", 5.0
    live, store = LiveMetrics(fleet_stale_s=60), DatabaseSlices(fleet_of("test", CREDENTIALS))
    _other_worker_rolls_up(store, NOW)
    _observed(live, NOW + 7)
    # when this worker hands its slice in
    _pass(live, store, NOW + 8)
    # then it rolls up itself: the fleet's row counts both workers' traffic
    assert EndpointStats.objects.get(fleet=store.fleet).requests == 2
    assert live.series_stats([SERIES], NOW + 8)[SERIES].stats.samples == 2
