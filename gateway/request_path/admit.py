"""Step 5 of the request path: admission — rate limits and budgets (SPEC R-LIM-1, R-LIM-2,
R-POL-2, R-BEY-8, D-28, D-29), after the plan names the models a request may try and before
any endpoint of them is called. (On an idle worker with Redis, the first model is decided
while Redis answers — `meanwhile` — but nothing of that decision takes effect before the
request is admitted.)

The rate limits of the key and its workspace (requests, the input estimate plus
`max_tokens` as tokens, a concurrency lease) are taken all or nothing, together with the
request's worst-case cost (budgets.py) reserved on every budget counter that applies —
the workspace's, the key's, a route budget node's the walk went through — in one atomic
step of the store (budgets/admitter.py; one round trip on Redis); when one
refuses, the other is given back. A refusal is 429 `rate_limited` (with `Retry-After`) or 402
`budget_exceeded`, nothing taken anywhere; a store that cannot answer is 503
`budget_store_unavailable`. The `Admission` is settled exactly once, on whichever way the
request ends (serve.py, record step): the reservation becomes the cost, unused tokens
are refunded, the lease is freed, alert thresholds crossed fire. A request no budget or
limit applies to touches no store.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from budgets import settling
from budgets.admitter import GiveBack, Meanwhile
from budgets.create import AdmissionStores
from budgets.rules.allowance import Allowance
from budgets.rules.budgets import (
    BudgetRule,
    Charge,
    charges,
    estimated_stream_micros,
    key_scope,
    usd,
    worst_case_micros,
)
from budgets.rules.holds import BudgetStoreUnavailable, Hold
from budgets.rules.limits import LimitSpec, LimitStoreUnavailable
from budgets.rules.route_usage import (
    StoreUsage,
    StoreUsageReader,
    tracking_rules,
    usage_counters,
)
from gateway import metrics
from gateway.errors import ApiError
from gateway.request_path.caller import Caller
from gateway.request_path.resolve import Resolved
from gateway.state.request_state import RoutingState
from routing.engine.routes import BudgetNode
from routing.engine.types import EndpointInfo

log = logging.getLogger(__name__)
BUDGET_HEADER = "x-switchyard-budget-remaining-usd"
SETTLE_MARGIN_S = 60.0  # a reservation outlives its request's deadline by this much


@dataclass(slots=True)
class Admission:
    """What a request took at admission; `settle` gives back what it did not use."""

    stores: AdmissionStores | None = None
    hold: Hold | None = None
    limits: tuple[LimitSpec, ...] = ()
    tokens_reserved: int = 0
    input_tokens: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    lease: str = ""  # the request's id: its concurrency lease and its reservation
    drawn: Allowance | None = None  # admitted from this worker's allowance (allowance.py)
    settled: bool = False

    def settle(self, cost_micros: int, tokens_used: int, now: float) -> None:
        """Replace the reservation with the actual cost; once, whoever calls first."""
        if self.settled or self.stores is None:
            return
        self.settled = True
        settling.start(self._settle(cost_micros, tokens_used, now))

    def cost_of(self, cost_micros: int, endpoint: EndpointInfo | None, streamed_chars: int) -> int:
        """The cost to settle at: the usage's, else (no usage: a stream cut short, an
        upstream that reports none) D-28's estimate, never less than the input."""
        if cost_micros or endpoint is None:
            return cost_micros
        return estimated_stream_micros(self.input_tokens, streamed_chars, endpoint)

    async def _settle(self, cost_micros: int, tokens_used: int, now: float) -> None:
        assert self.stores is not None
        back = GiveBack(
            self.limits,
            self.lease,
            self.tokens_reserved,
            tokens_used,
            self.hold,
            cost_micros,
            now,
            self.drawn,
        )
        try:
            await self.stores.admitter.give_back(back)  # (it fires the alerts crossed)
        except (BudgetStoreUnavailable, LimitStoreUnavailable) as error:
            # Redis: the cost is in the ledger all the same (settled_unreachable). The
            # database store: the reservation stays open; the sweeper charges it in full.
            log.error("settling request %s failed (%s)", self.lease, error)


NOTHING = Admission()


async def admit(
    caller: Caller,
    resolved: Resolved,
    models: Iterable[str | None],
    stores: AdmissionStores,
    *,
    deadline_s: float,
    meanwhile: Meanwhile = None,
) -> Admission:
    """`meanwhile`: the request's own work, which a Redis store runs once the admission's
    calls are written, while Redis answers (budgets/redis/admitter.py); it may not run
    at all (no budget or limit applies, another store, a busy worker): it only gets ahead."""
    rules = budget_rules(caller, resolved)
    limits = tuple(s for s in (caller.workspace.limits, caller.key.limits) if s is not None)
    if not rules and not limits:
        return NOTHING
    now, request_id = caller.started_at, str(caller.trace_id)
    routing = resolved.routing
    tokens = routing.input_tokens + routing.output_tokens
    admission = Admission(
        stores,
        limits=limits,
        tokens_reserved=tokens,
        input_tokens=routing.input_tokens,
        lease=request_id,
    )
    hold = _hold(caller, rules, models, admission, deadline_s) if rules else None
    try:
        taken = await stores.admitter.take(limits, tokens, request_id, hold, now, meanwhile)
    except (BudgetStoreUnavailable, LimitStoreUnavailable) as error:
        raise _unavailable() from error
    if taken.limits is not None:
        if not taken.limits.admitted:
            metrics.ADMISSION_REFUSALS.labels("rate_limited").inc()
            raise ApiError(
                429,
                _limit_message(taken.limits.refused),
                code="rate_limited",
                headers={**taken.limits.headers, "Retry-After": str(taken.limits.retry_after_s)},
            )
        admission.headers.update(taken.limits.headers)
    if taken.budget is not None:
        remaining = {BUDGET_HEADER: usd(taken.budget.remaining_micros)}
        if not taken.budget.admitted:
            assert taken.budget.refused is not None
            assert hold is not None
            metrics.ADMISSION_REFUSALS.labels("budget_exceeded").inc()
            raise ApiError(
                402,
                _budget_message(taken.budget.refused, hold.amount_micros),
                code="budget_exceeded",
                headers=remaining,
            )
        admission.hold = hold
        admission.headers.update(remaining)
    admission.drawn = taken.drawn
    return admission


def _unavailable() -> ApiError:
    metrics.ADMISSION_REFUSALS.labels("budget_store_unavailable").inc()
    return ApiError(
        503,
        "Budgets and rate limits cannot be checked right now; the request was not sent.",
        code="budget_store_unavailable",
        headers={"Retry-After": "1"},
    )


def _hold(
    caller: Caller,
    rules: tuple[BudgetRule, ...],
    models: Iterable[str | None],
    admission: Admission,
    deadline_s: float,
) -> Hold:
    """The reservation: the worst case (R-BEY-8) on every counter of `rules`."""
    now = caller.started_at
    output = admission.tokens_reserved - admission.input_tokens
    amount = worst_case_micros(admission.input_tokens, output, _reachable(caller, models))
    return Hold(
        str(caller.trace_id),
        caller.workspace.id,
        charges(rules, now),
        amount,
        now + deadline_s + SETTLE_MARGIN_S,
    )


async def with_route_usage(
    state: RoutingState, caller: Caller, stores: AdmissionStores
) -> RoutingState:
    """The routing state with the key's usage per period its routes' rate and budget nodes
    read, from the budget store (route_usage.py); unchanged for a key without such nodes."""
    periods = _usage_periods(caller)
    if not periods:
        return state
    counters = usage_counters(caller.workspace.id, caller.key.name, periods, caller.started_at)
    try:
        found = await stores.budgets.read(list(counters.values()))
    except BudgetStoreUnavailable as error:
        raise _unavailable() from error
    usage = StoreUsage({period: found[counter] for period, counter in counters.items()})
    return replace(state, usage=StoreUsageReader(usage))


def _usage_periods(caller: Caller) -> tuple[str, ...]:
    if not caller.key.routes:
        return ()
    deployed = caller.workspace.routes
    found = [
        p for slug in caller.key.routes if (d := deployed.get(slug)) is not None for p in d.periods
    ]
    return tuple(sorted(set(found))) if found else ()


def budget_rules(caller: Caller, resolved: Resolved) -> tuple[BudgetRule, ...]:
    """The workspace's budgets, the key's, each budget node of the key's route that the
    walk passed `within` (its cap applies to the key's spending in its period), and the
    uncapped counters its routes' rate and budget nodes read."""
    rules = caller.workspace.budgets + caller.key.budgets
    rules += tracking_rules(caller.workspace.id, caller.key.name, _usage_periods(caller))
    choice = resolved.route
    deployed = caller.workspace.routes.get(choice.slug) if choice is not None else None
    if choice is None or deployed is None or deployed.route is None or not deployed.periods:
        return rules  # (no periods: the route has no budget node)
    scope = key_scope(caller.workspace.id, caller.key.name)
    found = []
    for step in choice.outcome.visited:
        node = deployed.route.nodes.get(step.node)
        if isinstance(node, BudgetNode) and step.exit == "within":
            label = f"route {choice.slug} node {step.node}"
            found.append(BudgetRule(scope, node.period, node.limit_micros, (), label))
    return rules + tuple(found)


def _reachable(caller: Caller, models: Iterable[str | None]) -> list[EndpointInfo]:
    """The endpoints the plan's models may be answered by (auto: every endpoint)."""
    snap = caller.snapshot
    found: list[EndpointInfo] = []
    for model in models:
        found += snap.all_endpoints if model is None else snap.endpoints.get(model, ())
    return found


def _budget_message(refused: Charge, amount: int) -> str:
    rule = min(refused.rules, key=lambda r: r.limit_micros)
    return (
        f"The {rule.label} budget of ${usd(rule.limit_micros)} does not cover this "
        f"request's worst case of ${usd(amount)}."
    )


def _limit_message(refused: str | None) -> str:
    scope, _, kind = (refused or "/").rpartition("/")
    who = "key" if scope.startswith("key:") else "workspace"
    return f"The {who}'s {kind or 'rate'} limit is reached; retry after the Retry-After delay."


def tokens_used(usage: dict[str, Any] | None, admission: Admission) -> int:
    """What the rate limit's tokens settle to: the usage's total, else the reservation."""
    if usage:
        total = usage.get("total_tokens")
        if isinstance(total, int):
            return total
        return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return admission.tokens_reserved
