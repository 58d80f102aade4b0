"""The benchmark's values: what one scenario measured, a direct/gateway pair compared, and
the issue's bars judged against them. Plain data and arithmetic; no I/O."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The bars from the performance issue. Throughput bars count all workers together.
MIN_NONSTREAM_RPS_C16 = 700.0
MAX_ADDED_P50_MS_C1 = 2.5
MIN_STREAMS_PER_S_C64 = 544.0
MAX_ADDED_TTFB_MS_C64 = 2.0
MAX_IDLE_WORKER_RSS_MB = 120.0


@dataclass(frozen=True, slots=True)
class CpuShare:
    """CPU seconds spent during the measured window, by whom."""

    loadgen_s: float
    fake_s: float
    gateway_s: float  # server process, workers and helpers together
    workers_s: tuple[float, ...]  # each gateway worker, to show how evenly load spreads
    worker_connections: tuple[int, ...]  # client connections each worker held at the end
    machine_busy_s: float  # every process and the kernel, from /proc/stat
    machine_capacity_s: float  # window length x number of CPUs
    stores_s: float = 0.0  # Redis and PostgreSQL (measured with `--store postgres-redis`)

    @property
    def others_s(self) -> float:
        """Busy time not charged to the benchmark's processes or its stores: other programs
        on the machine, plus kernel work and accounting slack (a few % of a core when the
        machine is quiet)."""
        ours = self.loadgen_s + self.fake_s + self.gateway_s + self.stores_s
        return max(self.machine_busy_s - ours, 0.0)

    @property
    def machine_busy_pct(self) -> float:
        """How much of the whole machine was busy: near 100 means CPU-bound."""
        return self.machine_busy_s / self.machine_capacity_s * 100 if self.machine_capacity_s else 0


@dataclass(frozen=True, slots=True)
class Measurement:
    """One target at one (mode, concurrency) for one window."""

    target: str  # "fake alone" | "direct" | "gateway"
    stream: bool
    concurrency: int
    window_s: float
    latencies_s: Sequence[float]  # completed successes inside the window
    ttfbs_s: Sequence[float]
    errors: Mapping[str, int]  # kind -> count, over warm-up, window and drain
    sent: int  # requests started, warm-up included
    upstream_calls: int  # requests the fake upstream saw meanwhile
    cpu: CpuShare
    error_samples: Sequence[str] = field(default_factory=tuple)
    # chat | messages | native (messages to an Anthropic-style upstream) | routed (chat from
    # a key with a route) | governed (with a budget and rate limits)
    api: str = "chat"

    @property
    def mode(self) -> str:
        mode = "stream" if self.stream else "non-stream"
        return mode if self.api == "chat" else f"{self.api} {mode}"

    @property
    def completed(self) -> int:
        return len(self.latencies_s)

    @property
    def rate_per_s(self) -> float:
        return self.completed / self.window_s if self.window_s else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def p50_ms(self) -> float:
        return percentile_ms(self.latencies_s, 50)

    @property
    def p99_ms(self) -> float:
        return percentile_ms(self.latencies_s, 99)

    @property
    def ttfb_p50_ms(self) -> float:
        return percentile_ms(self.ttfbs_s, 50)

    def cpu_us_per_request(self, seconds: float) -> float:
        return seconds / self.completed * 1e6 if self.completed else float("nan")


@dataclass(frozen=True, slots=True)
class Pair:
    """Direct and gateway at the same mode and concurrency."""

    direct: Measurement
    gateway: Measurement
    round: int = 0  # with `--rounds N`, which of the scenario's interleaved rounds

    @property
    def added_p50_ms(self) -> float:
        return self.gateway.p50_ms - self.direct.p50_ms

    @property
    def rate_ratio(self) -> float:
        return self.gateway.rate_per_s / self.direct.rate_per_s if self.direct.rate_per_s else 0.0

    @property
    def added_ttfb_ms(self) -> float:
        return self.gateway.ttfb_p50_ms - self.direct.ttfb_p50_ms


@dataclass(frozen=True, slots=True)
class RssSample:
    """Resident memory of the gateway processes at one moment, in MB."""

    label: str
    master_mb: float
    workers_mb: Sequence[float]

    @property
    def total_mb(self) -> float:
        return self.master_mb + sum(self.workers_mb)


@dataclass(frozen=True, slots=True)
class Verdict:
    bar: str
    measured: str
    passed: bool | None  # None: not measured in this run
    scenario: tuple[bool, int] | None = None  # (stream, concurrency) the bar is read from

    @property
    def result(self) -> str:
        return {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]


def percentile_ms(samples_s: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile in milliseconds; NaN for no samples."""
    if not samples_s:
        return float("nan")
    ordered = sorted(samples_s)
    rank = max(math.ceil(pct / 100 * len(ordered)), 1)
    return ordered[rank - 1] * 1000


def judge_bars(pairs: Sequence[Pair], idle_rss: RssSample | None) -> list[Verdict]:
    """The issue's four bars; a scenario with errors fails its bar whatever its speed."""
    found = {(p.gateway.stream, p.gateway.concurrency): p for p in pairs if p.gateway.api == "chat"}
    verdicts = []
    c16 = found.get((False, 16))
    verdicts.append(
        Verdict(
            f"non-stream c16 gateway >= {MIN_NONSTREAM_RPS_C16:g} req/s",
            f"{c16.gateway.rate_per_s:.0f} req/s" if c16 else "not run",
            _clean(c16) and c16.gateway.rate_per_s >= MIN_NONSTREAM_RPS_C16 if c16 else None,
            (False, 16),
        )
    )
    c1 = found.get((False, 1))
    verdicts.append(
        Verdict(
            f"non-stream c1 added p50 <= {MAX_ADDED_P50_MS_C1:g} ms",
            f"{c1.added_p50_ms:+.3f} ms" if c1 else "not run",
            _clean(c1) and c1.added_p50_ms <= MAX_ADDED_P50_MS_C1 if c1 else None,
            (False, 1),
        )
    )
    s64 = found.get((True, 64))
    verdicts.append(
        Verdict(
            f"stream c64 gateway >= {MIN_STREAMS_PER_S_C64:g} streams/s"
            f" and TTFB <= direct + {MAX_ADDED_TTFB_MS_C64:g} ms",
            f"{s64.gateway.rate_per_s:.0f} streams/s, TTFB {s64.added_ttfb_ms:+.3f} ms"
            if s64
            else "not run",
            _clean(s64)
            and s64.gateway.rate_per_s >= MIN_STREAMS_PER_S_C64
            and s64.added_ttfb_ms <= MAX_ADDED_TTFB_MS_C64
            if s64
            else None,
            (True, 64),
        )
    )
    worst = max(idle_rss.workers_mb, default=0.0) if idle_rss else 0.0
    verdicts.append(
        Verdict(
            f"idle RSS per worker <= {MAX_IDLE_WORKER_RSS_MB:g} MB",
            f"max {worst:.1f} MB" if idle_rss and idle_rss.workers_mb else "not measured",
            worst <= MAX_IDLE_WORKER_RSS_MB if idle_rss and idle_rss.workers_mb else None,
        )
    )
    return verdicts


def _clean(pair: Pair) -> bool:
    return pair.gateway.error_count == 0
