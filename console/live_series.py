"""The live metrics page's numbers (SPEC R-OBS-2): a workspace's trace rows in a window
turned into JSON-ready series per provider or per endpoint — requests, error rate, latency
p50/p90/p99, time to first token p50 and traffic share — for each bucket of the window
and for the window as a whole.

Pure: no Django, no database, no clock (the caller passes `now` and the rows). The rows
are bounded by the caller (console/live_views.py reads at most `MAX_ROWS`), so the
percentiles are exact, by nearest rank, rather than estimated from a histogram.

A request no endpoint answered carries no provider or endpoint in its trace; it counts
for the endpoint its last attempt went to, the one whose failure the caller got. One that
never reached an upstream (refused by validation, admission or routing) counts under
`NOT_ROUTED`, so every request of the window is somewhere and the shares add up."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypedDict


@dataclass(frozen=True, slots=True)
class Window:
    span: timedelta
    bucket: timedelta


# Enough buckets for a line (15 to 48), few enough that a bucket of a quiet workspace
# still holds a handful of requests, and a 10 s refresh redraws at most 48 points a line.
WINDOWS = {
    "15m": Window(timedelta(minutes=15), timedelta(minutes=1)),  # 15 buckets
    "1h": Window(timedelta(hours=1), timedelta(minutes=2)),  # 30 buckets
    "24h": Window(timedelta(days=1), timedelta(minutes=30)),  # 48 buckets
}
GROUPINGS = ("provider", "endpoint")
NOT_ROUTED = "(not routed)"

# One trace, as console/live_views.py reads it: created_at (aware), provider, endpoint,
# status_code, latency_ms, ttfb_ms (streams only: the time to the first token), and the
# attempts — read only for a request no endpoint answered (provider ""), else None.
Row = tuple[datetime, str, str, int, int, int | None, Sequence[Mapping[str, Any]] | None]


def is_error(status_code: int) -> bool:
    """A request the gateway or its upstreams failed: 5xx. Not 4xx: those the caller
    caused (a bad body, an unknown model, its own budget or rate limit — a recorded 429 is
    the gateway's admission refusing the workspace, never an upstream's: an upstream's 429
    is retried elsewhere and, when every attempt fails so, answered 503,
    routing/engine/attempts.final_error). A stream that broke after its first token is
    recorded 200 `stream_interrupted`, like a client that hung up, so it is not counted."""
    return status_code >= 500


@dataclass(frozen=True, slots=True)
class Frame:
    """The buckets of one read: `count` buckets of `bucket_s` seconds from `start_s`
    (epoch seconds, aligned to the bucket), the last one still filling."""

    start_s: int
    bucket_s: int
    count: int

    @property
    def end_s(self) -> int:
        return self.start_s + self.bucket_s * self.count

    def starts(self) -> list[int]:
        return [self.start_s + i * self.bucket_s for i in range(self.count)]


def frame_of(window: Window, now: datetime) -> Frame:
    """The window's buckets up to `now`: aligned to the bucket size (so a refresh keeps
    the same edges), the bucket holding `now` last."""
    bucket_s = int(window.bucket.total_seconds())
    count = int(window.span.total_seconds()) // bucket_s
    end_s = (int(now.timestamp()) // bucket_s + 1) * bucket_s
    return Frame(start_s=end_s - count * bucket_s, bucket_s=bucket_s, count=count)


def group_of(row: Row, by: str) -> str:
    """The provider or the endpoint (`by`) a request counts for (the module docstring)."""
    _at, provider, endpoint, _status, _latency, _ttfb, attempts = row
    served = provider if by == "provider" else endpoint
    if served:
        return served
    last = attempts[-1] if attempts else None
    return str(last.get(by) or NOT_ROUTED) if last else NOT_ROUTED


def nearest_rank(ordered: Sequence[int], percent: int) -> int | None:
    """The `percent`-th percentile of `ordered` (ascending) by nearest rank: the smallest
    value with at least `percent` % of the values at or below it; None for no values."""
    if not ordered:
        return None
    return ordered[max(math.ceil(percent * len(ordered) / 100), 1) - 1]


class Summary(TypedDict):
    requests: int
    error_rate: float | None
    p50: int | None  # latency, ms
    p90: int | None
    p99: int | None
    ttft_p50: int | None  # time to first token of streams, ms
    share: float | None  # of all the workspace's requests in the bucket (or window)


class Series(TypedDict):
    requests: list[int]
    error_rate: list[float | None]
    p50: list[int | None]
    p90: list[int | None]
    p99: list[int | None]
    ttft_p50: list[int | None]
    share: list[float | None]


class LiveSeries(TypedDict):
    buckets: list[int]  # each bucket's start, epoch seconds
    groups: list[str]  # the series' names, in order (by name: each keeps its colour)
    series: dict[str, Series]
    totals: dict[str, Summary]
    overall: Summary  # every request of the window together
    rows: int  # the rows counted: those inside the frame


@dataclass(slots=True)
class _Tally:
    requests: int = 0
    errors: int = 0
    latencies_ms: list[int] = field(default_factory=list)
    ttfts_ms: list[int] = field(default_factory=list)

    def add(self, status_code: int, latency_ms: int, ttfb_ms: int | None) -> None:
        self.requests += 1
        self.errors += is_error(status_code)
        self.latencies_ms.append(latency_ms)
        if ttfb_ms is not None:
            self.ttfts_ms.append(ttfb_ms)

    def summary(self, all_requests: int) -> Summary:
        """Counts are 0 when nothing happened; a rate or a percentile of nothing is None
        (uPlot draws a gap for null)."""
        latencies, ttfts = sorted(self.latencies_ms), sorted(self.ttfts_ms)
        return Summary(
            requests=self.requests,
            error_rate=self.errors / self.requests if self.requests else None,
            p50=nearest_rank(latencies, 50),
            p90=nearest_rank(latencies, 90),
            p99=nearest_rank(latencies, 99),
            ttft_p50=nearest_rank(ttfts, 50),
            share=self.requests / all_requests if all_requests else None,
        )


def build_series(rows: Iterable[Row], frame: Frame, by: str) -> LiveSeries:
    """The series and totals of `rows` in `frame`, one per provider or endpoint (`by`,
    one of GROUPINGS). Rows outside the frame are left out (and out of `rows`)."""
    per_bucket: dict[str, list[_Tally]] = {}
    totals: dict[str, _Tally] = {}
    overall = _Tally()
    in_bucket = [0] * frame.count
    for row in rows:
        at_s = row[0].timestamp()
        if not frame.start_s <= at_s < frame.end_s:
            continue
        index = int(at_s - frame.start_s) // frame.bucket_s
        name = group_of(row, by)
        if name not in per_bucket:
            per_bucket[name] = [_Tally() for _ in range(frame.count)]
            totals[name] = _Tally()
        _at, _provider, _endpoint, status_code, latency_ms, ttfb_ms, _attempts = row
        for tally in (per_bucket[name][index], totals[name], overall):
            tally.add(status_code, latency_ms, ttfb_ms)
        in_bucket[index] += 1
    groups = sorted(per_bucket)
    return LiveSeries(
        buckets=frame.starts(),
        groups=groups,
        series={name: _series(per_bucket[name], in_bucket) for name in groups},
        totals={name: totals[name].summary(overall.requests) for name in groups},
        overall=overall.summary(overall.requests),
        rows=overall.requests,
    )


def _series(tallies: Sequence[_Tally], in_bucket: Sequence[int]) -> Series:
    summaries = [t.summary(n) for t, n in zip(tallies, in_bucket, strict=True)]
    return Series(
        requests=[s["requests"] for s in summaries],
        error_rate=[s["error_rate"] for s in summaries],
        p50=[s["p50"] for s in summaries],
        p90=[s["p90"] for s in summaries],
        p99=[s["p99"] for s in summaries],
        ttft_p50=[s["ttft_p50"] for s in summaries],
        share=[s["share"] for s in summaries],
    )
