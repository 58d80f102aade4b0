"""In-process live metrics per endpoint over a rolling window (SPEC R-OBS-2, R-API-8).

The request path records one observation per upstream attempt; `state(now)` rolls them up
into the `LiveState` the router reads (latency p50/p90/p99, throughput, error rate, and
which endpoints are unhealthy). The rollup is an input to `decide`, never computed inside
it, so the source can move to Redis samples and Celery rollups without touching the engine.
State is per process. No I/O; the caller passes the time.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from routing.engine.types import EndpointStats, LiveState

WINDOW_S = 300.0  # rolling five minutes (TS)
HEALTH_WINDOW_S = 30.0  # errors counted for health (R-EXE-2)
UNHEALTHY_ERRORS = 3  # errors within HEALTH_WINDOW_S that make an endpoint unhealthy
MAX_SAMPLES = 4096  # per endpoint; oldest dropped first, bounding memory under load
ROLLUP_EVERY_S = 1.0  # the rolled-up state is reused for this long


@dataclass(frozen=True, slots=True)
class Observation:
    at: float  # seconds, the caller's clock
    ok: bool
    latency_ms: float | None  # to the first byte of the answer (whole body if not streamed)
    tokens_per_s: float | None  # output tokens per second, non-streaming successes only
    kind: str = ""  # for failures: "error" lowers reliability; "rate_limited" and "geo" do not

    @property
    def counts_against_reliability(self) -> bool:
        return not self.ok and self.kind not in SEPARATE_KINDS


# R-EXE-4: a 429 and a geo-block (403) say nothing about whether the endpoint works; they
# are counted on their own and left out of the error rate and health.
SEPARATE_KINDS = frozenset({"rate_limited", "geo"})


def failure_kind(http_status: int | None) -> str:
    if http_status == 429:
        return "rate_limited"
    if http_status == 403:
        return "geo"
    return "error"


def _percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted, non-empty list."""
    rank = max(0, min(len(sorted_values) - 1, math.ceil(fraction * len(sorted_values)) - 1))
    return sorted_values[rank]


def rollup(observations: list[Observation]) -> EndpointStats:
    latencies = sorted(o.latency_ms for o in observations if o.ok and o.latency_ms is not None)
    rates = [o.tokens_per_s for o in observations if o.tokens_per_s is not None]
    errors = sum(1 for o in observations if o.counts_against_reliability)
    return EndpointStats(
        latency_p50_ms=_percentile(latencies, 0.50) if latencies else None,
        latency_p90_ms=_percentile(latencies, 0.90) if latencies else None,
        latency_p99_ms=_percentile(latencies, 0.99) if latencies else None,
        throughput_tps=sum(rates) / len(rates) if rates else None,
        error_rate=errors / len(observations) if observations else None,
        samples=len(observations),
        rate_limited=sum(1 for o in observations if o.kind == "rate_limited"),
        geo_blocked=sum(1 for o in observations if o.kind == "geo"),
    )


class LiveMetrics:
    def __init__(
        self, health_window_s: float = HEALTH_WINDOW_S, unhealthy_errors: int = UNHEALTHY_ERRORS
    ) -> None:
        self.health_window_s = health_window_s
        self.unhealthy_errors = unhealthy_errors
        self._samples: dict[str, deque[Observation]] = {}
        self._providers: dict[str, str] = {}  # endpoint id -> provider slug
        self._cached: LiveState | None = None
        self._cached_at = float("-inf")

    def observe(self, endpoint_id: str, provider: str, observation: Observation) -> None:
        samples = self._samples.get(endpoint_id)
        if samples is None:
            samples = self._samples[endpoint_id] = deque(maxlen=MAX_SAMPLES)
            self._providers[endpoint_id] = provider
        samples.append(observation)
        if not observation.ok:
            self._cached = None  # health may have changed: do not wait for the next rollup

    def _recent(self, endpoint_id: str, now: float, window_s: float) -> list[Observation]:
        samples = self._samples[endpoint_id]
        while samples and samples[0].at < now - WINDOW_S:
            samples.popleft()
        return [o for o in samples if o.at >= now - window_s]

    def state(self, now: float) -> LiveState:
        if self._cached is not None and now - self._cached_at < ROLLUP_EVERY_S:
            return self._cached
        stats: dict[str, EndpointStats] = {}
        unhealthy: set[str] = set()
        for endpoint_id in list(self._samples):
            window = self._recent(endpoint_id, now, WINDOW_S)
            if window:
                stats[endpoint_id] = rollup(window)
            recent = now - self.health_window_s
            recent_errors = sum(
                1 for o in window if o.counts_against_reliability and o.at >= recent
            )
            if recent_errors >= self.unhealthy_errors:
                unhealthy.add(endpoint_id)
        self._cached = LiveState(stats=stats, unhealthy=frozenset(unhealthy))
        self._cached_at = now
        return self._cached

    def by_provider(self, now: float) -> dict[str, dict[str, object]]:
        """`GET /health`: each provider's rolled-up numbers and its endpoints' (no secrets)."""
        self.state(now)
        grouped: dict[str, list[Observation]] = {}
        endpoints: dict[str, dict[str, dict[str, object]]] = {}
        for endpoint_id, provider in self._providers.items():
            window = self._recent(endpoint_id, now, WINDOW_S)
            if not window:
                continue
            grouped.setdefault(provider, []).extend(window)
            endpoints.setdefault(provider, {})[endpoint_id] = _stats_json(rollup(window))
        return {
            provider: {**_stats_json(rollup(window)), "endpoints": endpoints[provider]}
            for provider, window in sorted(grouped.items())
        }


def _stats_json(stats: EndpointStats) -> dict[str, object]:
    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    return {
        "latency_ms": {
            "p50": rounded(stats.latency_p50_ms),
            "p90": rounded(stats.latency_p90_ms),
            "p99": rounded(stats.latency_p99_ms),
        },
        "throughput_tokens_per_s": rounded(stats.throughput_tps),
        "error_rate": rounded(stats.error_rate),
        "rate_limited": stats.rate_limited,
        "geo_blocked": stats.geo_blocked,
        "samples": stats.samples,
    }
