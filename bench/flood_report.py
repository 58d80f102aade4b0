"""What one flood run (bench/flood.py) was asked to do and what it measured
(`FloodOptions`, `FloodResult`), and `render`, the Markdown facts and table it prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# Every phase ends by this long at most, whatever happens.
PHASE_TIMEOUT_S = 90.0


@dataclass(frozen=True, slots=True)
class FloodOptions:
    streams: int
    server: str
    pool_size: int | None  # SWITCHYARD_UPSTREAM_POOL_SIZE; None = the gateway's default
    worker_concurrency: int | None  # SWITCHYARD_WORKER_CONCURRENCY; None = the default


@dataclass
class FloodResult:
    options: FloodOptions
    facts: dict[str, str]
    rss_idle_mb: float = 0.0
    rss_plateau_mb: float = 0.0
    rss_after_mb: float = 0.0
    connected: int = 0  # client connects that completed
    connect_pending: int = 0  # client connects still not completed at the plateau
    connect_failed: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)  # what the gateway sent early
    held: int = 0  # the fake's in_flight at the plateau: streams waiting upstream
    plateau_s: float = 0.0  # from the first connect until `held` was reached
    stalled: str = ""  # why the flood stopped short of N, if it did
    worker_clients: int = 0  # client connections the worker holds at the plateau
    worker_upstreams: int = 0  # its connections to the fake at the plateau
    release_s: float | None = None  # None: in_flight was not 0 within PHASE_TIMEOUT_S
    ramp_cpu_s: float = 0.0  # the worker's CPU seconds from the first connect to the plateau
    release_cpu_s: float = 0.0  # and from the hang-up until in_flight was 0
    release_busy_pct: float = 0.0  # the whole machine's CPU then, % of one core
    upstream_calls: int = 0  # requests the fake received from the flood (should be N)
    in_flight_after_bar: int = 0  # the fake's in_flight RELEASE_BAR_S after the hang-up
    clients_after: int = 0  # the worker's client connections once in_flight was 0
    upstreams_after: int = 0  # and its connections to the fake then
    cancelled: int = 0  # the fake's handlers cut short by the hang-up
    health_after: str = ""
    call_after: str = ""
    crashed: str = ""
    log_tail: str = ""

    @property
    def kib_per_stream(self) -> float:
        """RSS growth per stream the worker holds (those waiting for a pool slot too)."""
        grown_kib = (self.rss_plateau_mb - self.rss_idle_mb) * 1024
        return grown_kib / self.worker_clients if self.worker_clients else 0.0


def render(result: FloodResult) -> str:
    o = result.options
    facts = {
        **result.facts,
        "server": f"{o.server}, 1 worker",
        "upstream pool": "gateway default" if o.pool_size is None else str(o.pool_size),
        "worker concurrency": (
            "gateway default" if o.worker_concurrency is None else str(o.worker_concurrency)
        ),
    }
    lines = [f"- {name}: {value}" for name, value in facts.items()]
    lines += [
        "",
        "| streams | worker holds | waiting upstream | ramp s | RSS idle MB | RSS held MB"
        " | KiB/stream | released in | open after 1 s | cancelled | RSS after MB"
        " | /healthz, call after |",
        "| --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |",
        f"| {o.streams} | {result.worker_clients} | {result.held} | {result.plateau_s:.1f}"
        f" | {result.rss_idle_mb:.1f}"
        f" | {result.rss_plateau_mb:.1f} | {result.kib_per_stream:.1f}"
        f" | {seconds_text(result.release_s)} | {result.in_flight_after_bar}"
        f" | {result.cancelled} | {result.rss_after_mb:.1f}"
        f" | {result.health_after}, {result.call_after} |",
        "",
        f"- client connects: {result.connected} done, {result.connect_pending} still pending,"
        f" failed {dict(result.connect_failed) or 'none'}",
        f"- the worker held {result.worker_clients} client and {result.worker_upstreams}"
        " upstream connections at the plateau; "
        f"{result.clients_after} and {result.upstreams_after} once the fake's in_flight was 0"
        " (idle keep-alive ones from the warm-up included)",
        f"- the worker's CPU: {result.ramp_cpu_s:.2f} s until the plateau,"
        f" {result.release_cpu_s:.2f} s for the release (the machine was"
        f" {result.release_busy_pct:.0f} % of a core busy then)",
        f"- upstream calls made by the flood: {result.upstream_calls}",
    ]
    if result.answered:
        lines.append(f"- answered before a first token: {dict(result.answered)}")
    if result.stalled:
        lines.append(f"- the flood stopped short: {result.stalled}")
    if result.crashed:
        lines.append(f"- CRASH: {result.crashed}")
    if result.log_tail:
        lines += ["", "gateway log (tail):", "```", result.log_tail, "```"]
    return "\n".join(lines)


def seconds_text(value: float | None) -> str:
    return f"> {PHASE_TIMEOUT_S:g} s" if value is None else f"{value:.3f} s"
