"""The simulator's numbers per run, and the fixed-width table that compares them.

Client-visible means what the caller of the gateway sees: a request's latency runs from its
arrival to the end of its last attempt (failed attempts' time included), and it is an error
only when every attempt failed. Percentiles are nearest-rank over every request of the run,
failed ones included. Cost counts successful attempts only (a refusal is not billed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from routing.sim.engine import RunResult
from routing.sim.strategies import MODEL_MODES


@dataclass(frozen=True, slots=True)
class Summary:
    scenario: str
    strategy: str
    shape: str  # "model" (providers of one model) or "virtual" (a virtual model's targets)
    requests: int
    error_rate: float  # 0..1
    p50_ms: float
    p99_ms: float
    cost_per_1k_usd: float
    pin_breaks: int  # a session served by another endpoint than its previous request
    routing_breaks: (
        int  # … of which the strategy moved it, with its endpoint neither failed nor cooling
    )
    attempts_per_request: float


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


def summarise(run: RunResult) -> Summary:
    requests = run.requests
    count = max(1, len(requests))
    latencies = [r.latency_ms for r in requests]
    breaks = [r.pin_break for r in requests if r.pin_break is not None]
    return Summary(
        scenario=run.scenario,
        strategy=run.strategy,
        shape="model" if run.strategy in MODEL_MODES else "virtual",
        requests=len(requests),
        error_rate=sum(1 for r in requests if not r.ok) / count,
        p50_ms=percentile(latencies, 0.50),
        p99_ms=percentile(latencies, 0.99),
        cost_per_1k_usd=sum(r.cost_usd for r in requests) / count * 1000,
        pin_breaks=len(breaks),
        routing_breaks=sum(1 for b in breaks if b == "routing"),
        attempts_per_request=sum(len(r.attempts) for r in requests) / count,
    )


COLUMNS = (  # (heading, width); text left-aligned, numbers right-aligned
    ("scenario", 16),
    ("strategy", 15),
    ("shape", 7),
    ("errors", 7),
    ("p50 ms", 7),
    ("p99 ms", 7),
    ("$/1k req", 8),
    ("pin breaks", 10),
    ("by routing", 10),
    ("tries/req", 9),
)


def render(summaries: Sequence[Summary]) -> str:
    """The comparison table, one row per scenario × strategy, a blank line between
    scenarios."""
    lines = [_row([heading for heading, _width in COLUMNS])]
    lines.append(_row(["-" * width for _heading, width in COLUMNS]))
    previous = None
    for s in summaries:
        if previous is not None and s.scenario != previous:
            lines.append("")
        previous = s.scenario
        lines.append(
            _row(
                [
                    s.scenario,
                    s.strategy,
                    s.shape,
                    f"{s.error_rate:.2%}",
                    f"{s.p50_ms:.0f}",
                    f"{s.p99_ms:.0f}",
                    f"{s.cost_per_1k_usd:.3f}",
                    str(s.pin_breaks),
                    str(s.routing_breaks),
                    f"{s.attempts_per_request:.2f}",
                ]
            )
        )
    return "\n".join(lines) + "\n"


def _row(cells: Sequence[str]) -> str:
    parts = []
    for index, (cell, (_heading, width)) in enumerate(zip(cells, COLUMNS, strict=True)):
        parts.append(cell.ljust(width) if index < 3 else cell.rjust(width))
    return "  ".join(parts).rstrip()
