"""What a budget reservation is and what the stores answer: the values the pure rules,
the stores and the admitters pass between them (ARCHITECTURE "Budgets are reserve →
settle"). No store here: they are in budgets/stores/ and budgets/redis/."""

from __future__ import annotations

from dataclasses import dataclass

from budgets.rules.budgets import Charge


class BudgetStoreUnavailable(Exception):
    """The store cannot be reached or failed: budgets cannot be checked."""


@dataclass(frozen=True, slots=True)
class Hold:
    """One request's reservation."""

    request_id: str
    workspace_id: int
    charges: tuple[Charge, ...]
    amount_micros: int
    expires_at: float  # epoch seconds; after it the sweeper charges it


@dataclass(frozen=True, slots=True)
class Verdict:
    admitted: bool
    # The least left under any cap: after this reservation, or without it when refused.
    remaining_micros: int
    refused: Charge | None = None


@dataclass(frozen=True, slots=True)
class Settled:
    """Each counter's spending before and after a settlement (for alert thresholds)."""

    before: dict[str, int]
    after: dict[str, int]


@dataclass(slots=True)
class CounterState:
    spent_micros: int = 0
    reserved_micros: int = 0
    requests: int = 0  # admitted in the period (in flight included); rebuilt: those settled
