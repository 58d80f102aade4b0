"""In-process counters of each key's usage per calendar period: what a route's
`rate_limit` and `budget` nodes read (SPEC R-ROUTE-1) until the budgets and limits work
gives them a shared ledger. One process's own count: with several workers or replicas each
counts its share, so a limit holds per process, not across them — said in docs/routes.md.

Only keys with attached routes are counted (nothing else reads the counts). A counter
holds the start of its period and restarts when a request falls in a later one.
"""

from __future__ import annotations

from dataclasses import dataclass

from routing.engine.routes import period_bounds
from routing.engine.routes.periods import PERIODS


@dataclass(slots=True)
class _Count:
    start: float  # epoch seconds: where the period counted here began
    requests: int = 0
    cost_micros: int = 0


class KeyUsage:
    def __init__(self) -> None:
        self._counts: dict[tuple[int, str], _Count] = {}
        self._starts: tuple[int, dict[str, float]] = (-1, {})  # (minute, period -> start)

    def starts(self, now: float) -> dict[str, float]:
        """Where each period holding `now` began. No period starts inside a minute, so the
        calendar arithmetic is done once a minute, not per request."""
        minute = int(now // 60)
        if self._starts[0] != minute:
            self._starts = (minute, {p: period_bounds(p, now)[0] for p in PERIODS})
        return self._starts[1]

    def add(self, key_id: int, now: float, cost_micros: int) -> None:
        for period, start in self.starts(now).items():
            count = self._counts.get((key_id, period))
            if count is None or count.start != start:
                count = self._counts[(key_id, period)] = _Count(start)
            count.requests += 1
            count.cost_micros += cost_micros

    def of(self, key_id: int, now: float) -> KeyUsageView:
        return KeyUsageView(self, key_id, now)

    def _current(self, key_id: int, period: str, now: float) -> _Count | None:
        count = self._counts.get((key_id, period))
        if count is None or count.start != self.starts(now)[period]:
            return None
        return count


@dataclass(frozen=True, slots=True)
class KeyUsageView:
    """One key's usage at `now`, read only: the `Usage` a route evaluation reads."""

    usage: KeyUsage
    key_id: int
    now: float

    def requests(self, period: str) -> int:
        count = self.usage._current(self.key_id, period, self.now)
        return count.requests if count else 0

    def cost_micros(self, period: str) -> int:
        count = self.usage._current(self.key_id, period, self.now)
        return count.cost_micros if count else 0

    def as_json(self) -> dict[str, list[int]]:
        """`{period: [requests, cost_micros]}` for every period (the trace's replay inputs)."""
        counts, starts = self.usage._counts, self.usage.starts(self.now)
        shown = {}
        for period, start in starts.items():
            count = counts.get((self.key_id, period))
            if count is not None and count.start == start:
                shown[period] = [count.requests, count.cost_micros]
            else:
                shown[period] = [0, 0]
        return shown
