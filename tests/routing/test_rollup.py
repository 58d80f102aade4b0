"""The live-metric rollup through its stores (SPEC R-OBS-2, D-31): slices handed in by two
workers — in the database, and in Redis when REDIS_URL is set — become one EndpointStats
row per endpoint, which each worker reads back knowing which of its slices it holds; the
series of workspaces' own credentials (R-BEY-7) the same, in a fleet of their own."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest

from routing.engine.live import Observation, credential_series, window_of
from routing.engine.live_slices import Slice
from routing.live_models import EndpointStats, LiveSlice
from routing.rollup import (
    CREDENTIALS,
    ENDPOINTS,
    KEEP_S,
    DatabaseSlices,
    RedisSlices,
    SliceStore,
    fleet_of,
    read_fleet,
    roll_up,
)

pytestmark = pytest.mark.django_db
NOW = 1_800_000_000.0


def _slice(
    worker: str, end: float, latencies: list[float], errors: int = 0,
    series: tuple[str, str] = ("cheap-ep", "cheap"),
) -> Slice:  # fmt: skip
    observations = [
        Observation(at=end, ok=True, latency_ms=ms, tokens_per_s=None) for ms in latencies
    ]
    observations += [Observation(at=end, ok=False, latency_ms=None, tokens_per_s=None)] * errors
    series_id, provider = series
    return Slice(worker, end, int(end), {series_id: (provider, window_of(observations))})


def _redis_store(series: str) -> Iterator[SliceStore]:
    from redis import Redis

    client = Redis.from_url(os.environ["REDIS_URL"])
    prefix = fleet_of(f"switchyard-test-rollup-{uuid.uuid4().hex[:8]}", series)
    yield RedisSlices(client, prefix)
    client.delete(f"{prefix}:live:slices")


def _store(request: pytest.FixtureRequest, series: str) -> Iterator[SliceStore]:
    if request.param == "database":
        yield DatabaseSlices(fleet_of("test", series))
    elif not os.environ.get("REDIS_URL"):
        pytest.skip("the Redis slice store needs REDIS_URL")
    else:
        yield from _redis_store(series)


@pytest.fixture(params=["database", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[SliceStore]:
    yield from _store(request, ENDPOINTS)


@pytest.fixture(params=["database", "redis"])
def credential_store(request: pytest.FixtureRequest) -> Iterator[SliceStore]:
    yield from _store(request, CREDENTIALS)


def test_r_obs_2_two_workers_slices_become_one_row_per_endpoint(store):
    store.push(_slice("a", NOW - 10, [100.0] * 6))
    store.push(_slice("b", NOW - 5, [1000.0] * 3, errors=1))
    store.push(_slice("a", NOW - 400, [5.0] * 50))  # older than the window
    assert roll_up(store, NOW) == 1
    row = EndpointStats.objects.get(endpoint="cheap-ep")
    assert (row.provider, row.requests) == ("cheap", 10)  # D-31: requests in the window
    assert row.error_rate == pytest.approx(0.1)
    assert row.reliability == pytest.approx(0.9)
    assert 96 <= row.latency_p50_ms <= 104
    assert 960 <= row.latency_p99_ms <= 1040
    fleet = read_fleet(store.fleet, "a")
    assert fleet is not None
    assert fleet.mine_seq == int(NOW - 10)
    assert fleet.windows["cheap-ep"][1].samples == 10
    assert read_fleet(store.fleet, "c").mine_seq is None  # a worker whose slices it holds none of


def test_r_obs_2_an_endpoint_with_no_slice_left_in_the_window_leaves_the_rollup(store):
    store.push(_slice("a", NOW - 10, [100.0]))
    roll_up(store, NOW)
    assert roll_up(store, NOW + 400) == 0
    assert not EndpointStats.objects.exists()
    assert read_fleet(store.fleet, "a") is None


def test_r_obs_2_fleets_sharing_one_database_keep_their_rollups_apart():
    ours, theirs = DatabaseSlices("ours"), DatabaseSlices("theirs")
    ours.push(_slice("a", NOW - 10, [100.0] * 2))
    theirs.push(_slice("b", NOW - 10, [100.0] * 5))
    roll_up(ours, NOW)
    roll_up(theirs, NOW)
    assert read_fleet("ours", "a").windows["cheap-ep"][1].samples == 2
    assert read_fleet("theirs", "b").windows["cheap-ep"][1].samples == 5


def test_slices_older_than_the_window_and_a_minute_are_trimmed():
    store = DatabaseSlices("test")
    store.push(_slice("a", NOW - KEEP_S - 1, [1.0]))
    store.push(_slice("a", NOW - 10, [1.0]))
    roll_up(store, NOW)
    assert list(LiveSlice.objects.values_list("end", flat=True)) == [NOW - 10]


def test_r_obs_2_the_celery_beat_task_rolls_up_the_configured_store(settings):
    # without a broker Celery runs the task in-process (gateway/celery.py), as beat's
    # worker would: it reads the store the gateways write to (here the database)
    from routing import rollup
    from routing.tasks import roll_up_live_metrics

    settings.REDIS_URL = ""
    rollup.slice_store.cache_clear()
    try:
        rollup.slice_store().push(_slice("a", time.time() - 1, [100.0] * 3))
        assert roll_up_live_metrics.apply().get() == 1
    finally:
        rollup.slice_store.cache_clear()
    assert EndpointStats.objects.get(endpoint="cheap-ep").requests == 3


def test_r_bey_7_two_workers_credential_slices_become_one_row_of_their_own_fleet(
    credential_store,
):
    # given two workers' attempts with workspace 12's own anthropic key
    own = (credential_series(12, "anthropic"), "anthropic")
    credential_store.push(_slice("a", NOW - 10, [100.0] * 2, errors=1, series=own))
    credential_store.push(_slice("b", NOW - 5, [300.0], errors=1, series=own))
    # when rolled up
    assert roll_up(credential_store, NOW) == 1
    # then one row, in the credentials' fleet, under the credential's series
    row = EndpointStats.objects.get()
    assert credential_store.fleet.endswith(":credentials")
    assert (row.fleet, row.endpoint, row.provider) == (credential_store.fleet, "ws:12/anthropic",
                                                       "anthropic")  # fmt: skip
    assert (row.requests, row.error_rate, row.reliability) == (5, 0.4, 0.6)
    assert 96 <= row.latency_p50_ms <= 104
    # which the endpoints' rollup of the same workers neither reads nor deletes
    endpoints = credential_store.fleet.removesuffix(":credentials")
    assert read_fleet(endpoints, "a") is None
    roll_up(DatabaseSlices(endpoints), NOW)
    fleet = read_fleet(credential_store.fleet, "a")
    assert fleet is not None
    assert fleet.windows["ws:12/anthropic"][1].samples == 5


def test_r_bey_7_the_celery_beat_task_rolls_up_the_credentials_too(settings):
    from routing import rollup
    from routing.tasks import roll_up_live_metrics

    # given an endpoint's slice and a credential's, in the stores the gateways write to
    settings.REDIS_URL = ""
    rollup.slice_store.cache_clear()
    own = (credential_series(12, "anthropic"), "anthropic")
    try:
        rollup.slice_store(ENDPOINTS).push(_slice("a", time.time() - 1, [100.0] * 3))
        rollup.slice_store(CREDENTIALS).push(_slice("a", time.time() - 1, [100.0], series=own))
        # when beat's task runs
        rolled = roll_up_live_metrics.apply().get()
    finally:
        rollup.slice_store.cache_clear()
    # then each has its row, in its own fleet
    assert rolled == 2
    rows = EndpointStats.objects.order_by("fleet").values_list("fleet", "endpoint", "requests")
    prefix = settings.SHARED_STATE_PREFIX
    assert list(rows) == [(prefix, "cheap-ep", 3), (f"{prefix}:credentials", "ws:12/anthropic", 1)]
