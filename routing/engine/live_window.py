"""A mergeable summary of one endpoint's observations (SPEC R-OBS-2): what workers send to
the live-metric rollup and what the rollup sends back to every router.

Percentiles cannot be added up, so latencies are kept as a histogram of log-spaced
buckets (each 8 % wider than the one before: any percentile read back is within 4 % of
the exact one) and windows merge by adding counts. Counts of outcomes (R-EXE-4 classes)
and a sum of token rates merge the same way. JSON in and out, compact: buckets with no
sample are left out. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from routing.engine.types import EndpointStats

GROWTH = 1.08
_LOG_GROWTH = math.log(GROWTH)
MAX_BUCKET = 240  # 1.08**240 ms ≈ 100 million ms: anything slower is in the last bucket


def bucket_of(ms: float) -> int:
    """The bucket holding `ms`: [GROWTH**b, GROWTH**(b+1)) ms, sub-millisecond in 0."""
    if ms < 1:
        return 0
    return min(MAX_BUCKET, int(math.log(ms) / _LOG_GROWTH))


def bucket_value(bucket: int) -> float:
    """What a bucket reads back as: the geometric middle of its bounds."""
    return math.pow(GROWTH, bucket + 0.5)


def percentile(histogram: Mapping[int, int], fraction: float) -> float | None:
    """Nearest-rank percentile of a histogram; None when it is empty."""
    total = sum(histogram.values())
    if total == 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= rank:
            return bucket_value(bucket)
    return bucket_value(max(histogram))  # unreachable: rank <= total


@dataclass(slots=True)
class Window:
    latency: dict[int, int] = field(default_factory=dict)  # successes' latency buckets
    ttft: dict[int, int] = field(default_factory=dict)  # streamed successes' first token
    ok: int = 0
    errors: int = 0  # failures that count against reliability
    rate_limited: int = 0
    geo_blocked: int = 0
    tps_sum: float = 0.0  # output tokens per second, non-streaming successes
    tps_count: int = 0

    def add(
        self,
        *,
        ok: bool,
        kind: str,
        latency_ms: float | None,
        streamed: bool,
        tokens_per_s: float | None,
    ) -> None:
        """One attempt's observation (routing/engine/live.py `Observation`'s fields)."""
        if ok:
            self.ok += 1
        elif kind == "rate_limited":
            self.rate_limited += 1
        elif kind == "geo":
            self.geo_blocked += 1
        else:
            self.errors += 1
        if ok and latency_ms is not None:
            histogram = self.ttft if streamed else self.latency
            bucket = bucket_of(latency_ms)
            histogram[bucket] = histogram.get(bucket, 0) + 1
        if tokens_per_s is not None:
            self.tps_sum += tokens_per_s
            self.tps_count += 1

    def merge(self, other: Window) -> None:
        for mine, theirs in ((self.latency, other.latency), (self.ttft, other.ttft)):
            for bucket, count in theirs.items():
                mine[bucket] = mine.get(bucket, 0) + count
        self.ok += other.ok
        self.errors += other.errors
        self.rate_limited += other.rate_limited
        self.geo_blocked += other.geo_blocked
        self.tps_sum += other.tps_sum
        self.tps_count += other.tps_count

    @property
    def samples(self) -> int:
        return self.ok + self.errors + self.rate_limited + self.geo_blocked

    def stats(self) -> EndpointStats:
        """The numbers the router scores with. A stream's latency is its time to first
        token (as a single worker's exact rollup counts it), so both histograms feed the
        latency percentiles; `ttft_percentiles` reads the streamed ones alone."""
        both = dict(self.latency)
        for bucket, count in self.ttft.items():
            both[bucket] = both.get(bucket, 0) + count
        return EndpointStats(
            latency_p50_ms=percentile(both, 0.50),
            latency_p90_ms=percentile(both, 0.90),
            latency_p99_ms=percentile(both, 0.99),
            throughput_tps=self.tps_sum / self.tps_count if self.tps_count else None,
            error_rate=self.errors / self.samples if self.samples else None,
            samples=self.samples,
            rate_limited=self.rate_limited,
            geo_blocked=self.geo_blocked,
        )

    def ttft_percentiles(self) -> tuple[float | None, float | None, float | None]:
        return tuple(percentile(self.ttft, f) for f in (0.5, 0.9, 0.99))  # type: ignore[return-value]

    def to_json(self) -> dict[str, Any]:
        return {
            "latency": {str(b): n for b, n in self.latency.items()},
            "ttft": {str(b): n for b, n in self.ttft.items()},
            "ok": self.ok,
            "errors": self.errors,
            "rate_limited": self.rate_limited,
            "geo_blocked": self.geo_blocked,
            "tps_sum": self.tps_sum,
            "tps_count": self.tps_count,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Window:
        return cls(
            latency={int(b): int(n) for b, n in data.get("latency", {}).items()},
            ttft={int(b): int(n) for b, n in data.get("ttft", {}).items()},
            ok=int(data.get("ok", 0)),
            errors=int(data.get("errors", 0)),
            rate_limited=int(data.get("rate_limited", 0)),
            geo_blocked=int(data.get("geo_blocked", 0)),
            tps_sum=float(data.get("tps_sum", 0.0)),
            tps_count=int(data.get("tps_count", 0)),
        )


def merged(windows: Iterable[Window]) -> Window:
    total = Window()
    for window in windows:
        total.merge(window)
    return total
