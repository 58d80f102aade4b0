"""The live metrics page's numbers (console/live_series.py, SPEC R-OBS-2): buckets aligned
to the window's step, a request no endpoint answered counted for its last attempt, errors
are 5xx, percentiles by nearest rank, shares of each bucket's requests. Pure: no database."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.live_series import (
    NOT_ROUTED,
    WINDOWS,
    Frame,
    Row,
    build_series,
    frame_of,
    group_of,
    is_error,
    nearest_rank,
)

NOW = datetime(2026, 12, 1, 10, 7, 30, tzinfo=UTC)
FRAME = frame_of(WINDOWS["15m"], NOW)  # 09:53 to 10:08, a minute a bucket
TRIED = [{"provider": "cheap", "endpoint": "cheap-llama", "status": "error"},
         {"provider": "pricey", "endpoint": "pricey-llama", "status": "error"}]  # fmt: skip


def _at(hh_mm_ss: str) -> datetime:
    hours, minutes, seconds = (int(part) for part in hh_mm_ss.split(":"))
    return NOW.replace(hour=hours, minute=minutes, second=seconds)


ROWS: list[Row] = [
    (_at("09:52:59"), "cheap", "cheap-llama", 200, 5, None, None),  # before the frame
    (_at("10:05:10"), "cheap", "cheap-llama", 200, 100, None, None),
    (_at("10:05:20"), "cheap", "cheap-llama", 200, 300, 50, None),
    (_at("10:05:40"), "", "", 503, 1200, None, TRIED),  # every attempt failed: pricey's
    (_at("10:06:05"), "pricey", "pricey-llama", 200, 200, 80, None),
    (_at("10:06:30"), "", "", 400, 3, None, []),  # refused before any upstream
]
GAP = [None] * 12  # 09:53 … 10:04, before the first request


@pytest.mark.parametrize(
    ("_case", "window", "start", "count", "bucket_s"),
    [
        ("15 minutes of minutes", "15m", "09:53:00", 15, 60),
        ("an hour of 2 minutes", "1h", "09:08:00", 30, 120),
        ("a day of half hours", "24h", "10:30:00", 48, 1800),
    ],
)
def test_a_window_is_buckets_aligned_to_its_step_ending_with_the_one_now_is_in(
    _case, window, start, count, bucket_s
):
    # when
    frame = frame_of(WINDOWS[window], NOW)
    # then
    expected_start = _at(start) - (timedelta(days=1) if window == "24h" else timedelta())
    assert frame == Frame(int(expected_start.timestamp()), bucket_s, count)
    assert frame.start_s <= NOW.timestamp() - WINDOWS[window].span.total_seconds() + bucket_s
    assert frame.end_s - bucket_s <= NOW.timestamp() < frame.end_s


@pytest.mark.parametrize(
    ("status_code", "expected"),
    [(200, False), (400, False), (404, False), (429, False), (499, False), (500, True),
     (502, True), (503, True), (504, True)],
)  # fmt: skip
def test_an_error_is_a_5xx_never_what_the_caller_caused(status_code, expected):
    assert is_error(status_code) is expected


@pytest.mark.parametrize(
    ("_case", "values", "expected"),
    [
        ("none", [], (None, None, None)),
        ("one", [7], (7, 7, 7)),
        ("two", [100, 300], (100, 300, 300)),
        ("four", [1, 2, 3, 4], (2, 4, 4)),
        ("ten", list(range(1, 11)), (5, 9, 10)),
        ("a hundred", list(range(1, 101)), (50, 90, 99)),
    ],
)
def test_percentiles_are_by_nearest_rank_on_exact_values(_case, values, expected):
    assert tuple(nearest_rank(values, p) for p in (50, 90, 99)) == expected


@pytest.mark.parametrize(
    ("_case", "row", "by", "expected"),
    [
        ("served, by provider", ROWS[1], "provider", "cheap"),
        ("served, by endpoint", ROWS[1], "endpoint", "cheap-llama"),
        ("failed: its last attempt's provider", ROWS[3], "provider", "pricey"),
        ("failed: its last attempt's endpoint", ROWS[3], "endpoint", "pricey-llama"),
        ("never tried", ROWS[5], "provider", NOT_ROUTED),
        ("an attempt without a provider", (NOW, "", "", 503, 1, None, [{}]), "provider",
         NOT_ROUTED),
    ],
)  # fmt: skip
def test_a_request_counts_for_the_endpoint_that_answered_or_was_tried_last(
    _case, row, by, expected
):
    assert group_of(row, by) == expected


def test_series_per_provider_by_hand():
    # when
    live = build_series(ROWS, FRAME, "provider")
    # then
    assert live["buckets"] == [int(_at("09:53:00").timestamp()) + 60 * i for i in range(15)]
    assert live["groups"] == [NOT_ROUTED, "cheap", "pricey"]
    assert live["rows"] == 5  # the one before the frame is left out
    cheap, pricey, refused = (live["series"][n] for n in ("cheap", "pricey", NOT_ROUTED))
    assert cheap == {
        "requests": [0] * 12 + [2, 0, 0],
        "error_rate": GAP + [0.0, None, None],
        "p50": GAP + [100, None, None],
        "p90": GAP + [300, None, None],
        "p99": GAP + [300, None, None],
        "ttft_p50": GAP + [50, None, None],
        "share": GAP + [2 / 3, 0.0, None],
    }
    assert pricey == {
        "requests": [0] * 12 + [1, 1, 0],
        "error_rate": GAP + [1.0, 0.0, None],
        "p50": GAP + [1200, 200, None],
        "p90": GAP + [1200, 200, None],
        "p99": GAP + [1200, 200, None],
        "ttft_p50": GAP + [None, 80, None],
        "share": GAP + [1 / 3, 0.5, None],
    }
    assert refused["requests"] == [0] * 12 + [0, 1, 0]
    assert refused["share"] == GAP + [0.0, 0.5, None]
    assert refused["error_rate"] == GAP + [None, 0.0, None]


def test_totals_cover_the_whole_window():
    # when
    live = build_series(ROWS, FRAME, "provider")
    # then
    assert live["totals"] == {
        NOT_ROUTED: {"requests": 1, "error_rate": 0.0, "p50": 3, "p90": 3, "p99": 3,
                     "ttft_p50": None, "share": 0.2},
        "cheap": {"requests": 2, "error_rate": 0.0, "p50": 100, "p90": 300, "p99": 300,
                  "ttft_p50": 50, "share": 0.4},
        "pricey": {"requests": 2, "error_rate": 0.5, "p50": 200, "p90": 1200, "p99": 1200,
                   "ttft_p50": 80, "share": 0.4},
    }  # fmt: skip
    assert live["overall"] == {"requests": 5, "error_rate": 0.2, "p50": 200, "p90": 1200,
                               "p99": 1200, "ttft_p50": 50, "share": 1.0}  # fmt: skip


def test_by_endpoint_a_failed_request_counts_for_the_endpoint_tried_last():
    live = build_series(ROWS, FRAME, "endpoint")
    assert live["groups"] == [NOT_ROUTED, "cheap-llama", "pricey-llama"]
    assert live["totals"]["pricey-llama"]["error_rate"] == 0.5


def test_no_rows_is_a_frame_of_gaps():
    live = build_series([], FRAME, "provider")
    assert live["buckets"] == FRAME.starts()
    assert (live["groups"], live["series"], live["totals"], live["rows"]) == ([], {}, {}, 0)
    assert live["overall"] == {"requests": 0, "error_rate": None, "p50": None, "p90": None,
                               "p99": None, "ttft_p50": None, "share": None}  # fmt: skip


ROW = st.tuples(
    st.integers(min_value=0, max_value=15 * 60 - 1),  # seconds into the frame
    st.sampled_from(["a", "b", "c", ""]),
    st.sampled_from([200, 400, 429, 500, 503]),
    st.integers(min_value=0, max_value=60_000),
    st.none() | st.integers(min_value=0, max_value=10_000),
    st.none() | st.just([{"provider": "b", "endpoint": "b-1"}]),
)


@given(st.lists(ROW, max_size=80), st.sampled_from(["provider", "endpoint"]))
def test_every_request_counts_once_and_the_numbers_hold_together(drawn, by):
    # given
    start = datetime.fromtimestamp(FRAME.start_s, UTC)
    rows: list[Row] = [
        (start + timedelta(seconds=s), p, f"{p}-1" if p else "", code, ms, ttfb, tried)
        for s, p, code, ms, ttfb, tried in drawn
    ]
    # when
    live = build_series(rows, FRAME, by)
    # then
    series = live["series"].values()
    assert live["rows"] == len(rows) == live["overall"]["requests"]
    assert sum(sum(s["requests"]) for s in series) == len(rows)
    assert sum(t["requests"] for t in live["totals"].values()) == len(rows)
    for i in range(FRAME.count):
        in_bucket = sum(s["requests"][i] for s in series)
        shares = [s["share"][i] for s in series]
        if in_bucket:
            assert math.isclose(sum(shares), 1.0)  # type: ignore[arg-type]
        else:
            assert all(share is None for share in shares)
    per_bucket = [{key: values[i] for key, values in s.items()}
                  for s in series for i in range(FRAME.count)]  # fmt: skip
    for summary in [*live["totals"].values(), *per_bucket]:
        if summary["requests"]:
            assert summary["p50"] <= summary["p90"] <= summary["p99"]
            assert 0.0 <= summary["error_rate"] <= 1.0
        else:
            assert (summary["p50"], summary["error_rate"], summary["ttft_p50"]) == (None,) * 3
