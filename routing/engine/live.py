"""Live metrics per endpoint over a rolling window (SPEC R-OBS-2, R-API-8).

The request path records one observation per upstream attempt; `state(now)` rolls them up
into the `LiveState` the router reads (latency p50/p90/p99, throughput, error rate, and
which endpoints are unhealthy). The rollup is an input to `decide`, never computed inside
it.

Alone, a worker rolls up its own observations (exactly). With others, it hands what it
observed since the last time to the live-metric rollup as a slice (`take_slice`), and the
rollup of every worker's slices comes back (`set_fleet`, gateway/live_rollup.py): the
router then reads the fleet's window merged with this worker's observations the rollup
has not seen yet, so a failure seen here acts at once. Health (R-EXE-2: errors in the
last 30 s) stays this worker's own, as cooldowns and peak-EWMA do (GM). No I/O; the
caller passes the time.

The same class keeps a second set of series: one per workspace's own provider key (BYOK,
`credential_series`), in an instance of its own, so those attempts are counted for the
workspace (R-BEY-7) without counting twice in the endpoints' numbers the router reads.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from routing.engine.live_window import Window, merged
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
    streamed: bool = False  # latency_ms is then the time to the first token

    @property
    def counts_against_reliability(self) -> bool:
        return not self.ok and self.kind not in SEPARATE_KINDS


# R-EXE-4: a 429 and a geo-block (403) say nothing about whether the endpoint works; they
# are counted on their own and left out of the error rate and health.
SEPARATE_KINDS = frozenset({"rate_limited", "geo"})


def credential_series(workspace_id: int, provider: str) -> str:
    """The series of a workspace's own key for `provider`: its id in the rollup's
    `EndpointStats.endpoint` (another fleet's rows than the endpoints')."""
    return f"ws:{workspace_id}/{provider}"


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


@dataclass(frozen=True, slots=True)
class SeriesStats:
    """One series' rolling five minutes: the router's numbers and streams' time to first
    token (p50, p90, p99 in ms; None without a streamed success)."""

    stats: EndpointStats
    ttft_ms: tuple[float | None, float | None, float | None]


@dataclass(frozen=True, slots=True)
class Fleet:
    """The rollup of every worker's slices as one worker received it."""

    windows: dict[str, tuple[str, Window]]  # endpoint id -> (provider, window)
    mine_seq: int | None  # the last of this worker's observations in it (None: none was)
    at: float  # when it was rolled up


def window_of(observations: list[Observation]) -> Window:
    window = Window()
    for o in observations:
        window.add(
            ok=o.ok,
            kind=o.kind,
            latency_ms=o.latency_ms,
            streamed=o.streamed,
            tokens_per_s=o.tokens_per_s,
        )
    return window


class LiveMetrics:
    def __init__(
        self,
        health_window_s: float = HEALTH_WINDOW_S,
        unhealthy_errors: int = UNHEALTHY_ERRORS,
        fleet_stale_s: float = 30.0,
    ) -> None:
        self.health_window_s = health_window_s
        self.unhealthy_errors = unhealthy_errors
        self.fleet_stale_s = fleet_stale_s  # an older rollup is ignored: the store is away
        # per endpoint (sequence number, observation): the number says what a slice holds
        self._samples: dict[str, deque[tuple[int, Observation]]] = {}
        self._seq = 0
        self._providers: dict[str, str] = {}  # endpoint id -> provider slug
        self._cached: LiveState | None = None
        self._cached_at = float("-inf")
        self._sliced_seq = 0  # observations up to this number went into a slice
        self._fleet: Fleet | None = None

    def observe(self, endpoint_id: str, provider: str, observation: Observation) -> None:
        samples = self._samples.get(endpoint_id)
        if samples is None:
            samples = self._samples[endpoint_id] = deque(maxlen=MAX_SAMPLES)
            self._providers[endpoint_id] = provider
        self._seq += 1
        samples.append((self._seq, observation))
        if not observation.ok:
            self._cached = None  # health may have changed: do not wait for the next rollup

    def take_slice(self) -> tuple[int, int, dict[str, tuple[str, Window]]]:
        """(since, upto, windows): the observations recorded after the last slice, per
        endpoint, numbered `since` + 1 … `upto`. By number, not time: an observation is
        stamped with its request's start, so a long request's lands after later ones."""
        since, upto = self._sliced_seq, self._seq
        self._sliced_seq = upto
        taken: dict[str, tuple[str, Window]] = {}
        for endpoint_id, samples in list(self._samples.items()):
            new = [o for seq, o in list(samples) if since < seq <= upto]
            if new:
                taken[endpoint_id] = (self._providers[endpoint_id], window_of(new))
        return since, upto, taken

    def give_back_slice(self, since: int) -> None:
        """The slice taken after `since` never reached the rollup: the next one holds it."""
        self._sliced_seq = min(self._sliced_seq, since)

    def set_fleet(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self._cached = None

    def _recent(self, endpoint_id: str, now: float, window_s: float) -> list[Observation]:
        samples = self._samples[endpoint_id]
        while samples and samples[0][1].at < now - WINDOW_S:
            samples.popleft()
        return [o for _seq, o in samples if o.at >= now - window_s]

    def _fresh_fleet(self, now: float) -> Fleet | None:
        fleet = self._fleet
        if fleet is None or now - fleet.at > self.fleet_stale_s:
            return None
        return fleet

    def _merged_window(self, fleet: Fleet, series_id: str, now: float) -> Window:
        """The fleet's window of one series plus this worker's observations in the last
        five minutes that the rollup has not seen. Reads only, over copies: it may run in
        another thread than the one observing (`series_stats`)."""
        window = Window()
        if series_id in fleet.windows:
            window.merge(fleet.windows[series_id][1])
        samples = self._samples.get(series_id)
        if samples:
            seen, start = fleet.mine_seq or 0, now - WINDOW_S
            window.merge(window_of([o for seq, o in list(samples) if seq > seen and o.at >= start]))
        return window

    def _windows(self, now: float) -> dict[str, tuple[str, Window]] | None:
        """The fleet's windows with this worker's observations it has not seen added;
        None without a fresh rollup (then this worker's own, exact, are used)."""
        fleet = self._fresh_fleet(now)
        if fleet is None:
            return None
        windows = {}
        for series_id in dict.fromkeys([*fleet.windows, *list(self._samples)]):
            if series_id in self._samples:
                self._recent(series_id, now, WINDOW_S)  # drops what left the window
            known = fleet.windows.get(series_id)
            provider = known[0] if known is not None else self._providers[series_id]
            windows[series_id] = (provider, self._merged_window(fleet, series_id, now))
        return windows

    def series_stats(self, series_ids: Iterable[str], now: float) -> dict[str, SeriesStats]:
        """Each of `series_ids` with attempts in the last five minutes (the others are left
        out): the fleet's numbers with this worker's unseen ones when a fresh rollup
        exists, else this worker's own (exact) — as `by_provider` shows endpoints. Reads
        only, over copies, so another thread may ask (the management API's views)."""
        fleet = self._fresh_fleet(now)
        found: dict[str, SeriesStats] = {}
        for series_id in series_ids:
            if fleet is not None:
                window = self._merged_window(fleet, series_id, now)
                if window.samples:
                    found[series_id] = SeriesStats(window.stats(), window.ttft_percentiles())
                continue
            samples = self._samples.get(series_id)
            recent = [o for _seq, o in list(samples or ()) if o.at >= now - WINDOW_S]
            if recent:
                found[series_id] = SeriesStats(rollup(recent), window_of(recent).ttft_percentiles())
        return found

    def state(self, now: float) -> LiveState:
        if self._cached is not None and now - self._cached_at < ROLLUP_EVERY_S:
            return self._cached
        fleet = self._windows(now)
        stats: dict[str, EndpointStats] = {}
        if fleet is not None:
            stats = {eid: w.stats() for eid, (_p, w) in fleet.items() if w.samples}
        unhealthy: set[str] = set()
        for endpoint_id in list(self._samples):
            window = self._recent(endpoint_id, now, WINDOW_S)
            if window and fleet is None:
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
        """`GET /health`: each provider's rolled-up numbers and its endpoints' (no secrets):
        the fleet's when there is a fresh rollup, else this worker's own (exact)."""
        fleet = self._windows(now)
        if fleet is None:
            return self._own_by_provider(now)
        grouped: dict[str, list[Window]] = {}
        endpoints: dict[str, dict[str, dict[str, object]]] = {}
        for endpoint_id, (provider, window) in sorted(fleet.items()):
            if window.samples:
                grouped.setdefault(provider, []).append(window)
                endpoints.setdefault(provider, {})[endpoint_id] = _shown(window.stats(), window)
        shown = {}
        for provider, windows in sorted(grouped.items()):
            total = merged(windows)
            shown[provider] = {**_shown(total.stats(), total), "endpoints": endpoints[provider]}
        return shown

    def _own_by_provider(self, now: float) -> dict[str, dict[str, object]]:
        self.state(now)
        grouped: dict[str, list[Observation]] = {}
        endpoints: dict[str, dict[str, dict[str, object]]] = {}
        for endpoint_id, provider in self._providers.items():
            window = self._recent(endpoint_id, now, WINDOW_S)
            if not window:
                continue
            grouped.setdefault(provider, []).extend(window)
            shown = _shown(rollup(window), window_of(window))
            endpoints.setdefault(provider, {})[endpoint_id] = shown
        return {
            provider: {**_shown(rollup(obs), window_of(obs)), "endpoints": endpoints[provider]}
            for provider, obs in sorted(grouped.items())
        }


def _shown(stats: EndpointStats, window: Window) -> dict[str, object]:
    """One endpoint's or provider's numbers as `/health` shows them (D-31: `requests`)."""
    p50, p90, p99 = window.ttft_percentiles()
    return {
        **_stats_json(stats),
        "ttft_ms": {"p50": _rounded(p50), "p90": _rounded(p90), "p99": _rounded(p99)},
        "requests": stats.samples,
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


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
