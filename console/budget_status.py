"""What the console's Budgets & limits page shows (SPEC R-LIM-1, R-LIM-2, R-POL-2, D-28):
every budget of a workspace — its own (the policy's `daily_budget` among them), each key
name's, each budget node of its deployed routes for every key name the route is attached
to — with the current period's spending and the alerts fired in it; the rate limits as
configured; and each route `rate_limit` node with the attached keys' requests so far.

Spending is read once per page from this process's budget store, the one the gateway
admits with, by the management API's own read (`management_api.runtime.read_counters`) and
the same counter names the admission code charges (`counter_name` of the workspace's or
the key name's scope): a route's nodes read the key's counter of their period. A page
without budgets or route nodes never touches the store. A store that cannot answer makes
`BudgetPage.unavailable` true and leaves every line's `spending` None — never zeros.

Rate limits show what is in use now beside each limit — the requests and tokens of the
last minute not yet drained, the requests in flight — read from the limit store the
gateway admits with (`LimitStore.usage`, which takes nothing): shared by every replica on
Redis, this worker's own otherwise, as the page says. A store that cannot answer leaves
the usage None, never zeros."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from budgets.models import BudgetAlert, RateLimit
from budgets.rules.budgets import counter_name, key_scope, workspace_scope
from budgets.rules.holds import CounterState
from budgets.rules.limits import LimitUse
from gateway.errors import ApiError
from gateway.state import admission_state
from management_api.budget_serializers import is_limiting
from management_api.budget_views import configured_budgets
from management_api.runtime import read_counters, read_limit_usage
from presets.catalog import catalog_names
from presets.models import KeySettings, Route
from routing.engine.routes import BudgetNode, RateLimitNode, RouteInvalid, parse_route
from routing.engine.routes.periods import period_bounds
from workspaces.models import Workspace

MICROS_PER_USD = 1_000_000
STORE_UNAVAILABLE = "budget_store_unavailable"  # read_counters' ApiError code
BAR_STEP_PERCENT = 5  # the .wN classes of console.css: no inline style under the CSP


@dataclass(frozen=True, slots=True)
class Alert:
    threshold: float  # a fraction of the cap
    fired_at: datetime | None  # when it fired this period; None: not yet

    @property
    def percent(self) -> str:
        return f"{self.threshold * 100:g}"


@dataclass(frozen=True, slots=True)
class BudgetLine:
    """One cap on one counter: a `Budget` row, the policy's `daily_budget`, or a route
    budget node for one key name."""

    source: str  # budget | policy | route
    budget_id: int | None  # the Budget row's; None for the policy's and a route's
    scope: str  # what a person reads: `workspace`, `key support-bot`
    key_name: str
    period: str  # daily | weekly | monthly
    limit_micros: int
    period_start: datetime
    resets_at: datetime
    counter: str = ""  # "" when no key uses the route
    alerts: tuple[Alert, ...] = ()
    spending: CounterState | None = None  # None: not read (see `note`) or unavailable
    route: str = ""  # `support v3 node cap` for a route's
    note: str = ""  # why there is no spending to show, other than the store

    @property
    def remaining_micros(self) -> int:
        """What is left under this cap (never below 0), as the management API says it."""
        used = self.spending.spent_micros + self.spending.reserved_micros if self.spending else 0
        return max(self.limit_micros - used, 0)

    @property
    def limit_usd(self) -> str:
        return usd(self.limit_micros)

    @property
    def spent_usd(self) -> str:
        return usd(self.spending.spent_micros) if self.spending else ""

    @property
    def reserved_usd(self) -> str:
        return usd(self.spending.reserved_micros) if self.spending else ""

    @property
    def remaining_usd(self) -> str:
        return usd(self.remaining_micros) if self.spending else ""

    @property
    def used_percent(self) -> int:
        """Spent and reserved, as a whole percentage of the cap (100: a cap of 0)."""
        if self.spending is None:
            return 0
        used = self.spending.spent_micros + self.spending.reserved_micros
        return 100 if self.limit_micros <= 0 else round(100 * used / self.limit_micros)

    @property
    def spent_width(self) -> int:
        spent = self.spending.spent_micros if self.spending else 0
        return bar_width(spent, self.limit_micros)

    @property
    def reserved_width(self) -> int:
        """The reserved part of the bar, after the spent part; the two fill at most 100."""
        if self.spending is None:
            return 0
        used = self.spending.spent_micros + self.spending.reserved_micros
        return bar_width(used, self.limit_micros) - self.spent_width


@dataclass(frozen=True, slots=True)
class RateNodeLine:
    """A route's `rate_limit` node for one key name: the requests it allows in its
    period and how many the key has made there (the counter its walk reads)."""

    route: str  # `support v3 node pace`
    period: str  # minute | hour | daily | weekly | monthly
    requests: int
    key_name: str  # "" when no key uses the route
    resets_at: datetime
    counter: str = ""
    used: int | None = None  # None: not read (no key) or the store is unavailable


@dataclass(frozen=True, slots=True)
class RateLimitLine:
    """A scope's configured limits and, by kind, what each has in use now."""

    row: RateLimit
    uses: dict[str, LimitUse] | None  # requests | tokens | concurrent; None: not read

    def use(self, kind: str) -> LimitUse | None:
        return (self.uses or {}).get(kind)

    @property
    def requests(self) -> LimitUse | None:
        return self.use("requests")

    @property
    def tokens(self) -> LimitUse | None:
        return self.use("tokens")

    @property
    def concurrent(self) -> LimitUse | None:
        return self.use("concurrent")


@dataclass(frozen=True, slots=True)
class BudgetPage:
    budgets: tuple[BudgetLine, ...]
    rate_limits: tuple[RateLimitLine, ...]
    rate_nodes: tuple[RateNodeLine, ...]
    unavailable: bool  # the budget store could not answer: no spending is shown
    limits_unavailable: bool = False  # the limit store could not answer: no usage shown
    limits_shared: bool = False  # usage counts every replica (Redis), not this worker's


def usd(micros: int) -> str:
    """`12.345678`, `1.50`: at least the cents, and every micro-dollar that is there."""
    whole, fraction = divmod(abs(micros), MICROS_PER_USD)
    digits = f"{fraction:06d}".rstrip("0").ljust(2, "0")
    return f"{'-' if micros < 0 else ''}{whole}.{digits}"


def bar_width(part_micros: int, whole_micros: int) -> int:
    """`part` of `whole` as a percentage to the nearest 5, within 0…100 (100 when the whole
    is 0 and something counts against it)."""
    if whole_micros <= 0:
        return 100 if part_micros > 0 else 0
    percent = 100 * min(max(part_micros, 0), whole_micros) / whole_micros
    return int(round(percent / BAR_STEP_PERCENT) * BAR_STEP_PERCENT)


def _utc(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, tz=UTC)


def _scope(workspace: Workspace, key_name: str) -> str:
    return key_scope(workspace.pk, key_name) if key_name else workspace_scope(workspace.pk)


def _configured(workspace: Workspace, now: float) -> list[BudgetLine]:
    """The workspace's and key names' budgets, in the management API's order."""
    lines = []
    for row in configured_budgets(workspace):
        start, end = period_bounds(row["period"], now)
        name = row["key_name"]
        lines.append(
            BudgetLine(
                source=row["source"],
                budget_id=row["id"],
                scope=f"key {name}" if name else "workspace",
                key_name=name,
                period=row["period"],
                limit_micros=row["limit_micros"],
                period_start=_utc(start),
                resets_at=_utc(end),
                counter=counter_name(_scope(workspace, name), row["period"], now),
                alerts=tuple(Alert(float(t), None) for t in row["alerts"]),
            )
        )
    return lines


def _route_nodes(workspace: Workspace, now: float) -> tuple[list[BudgetLine], list[RateNodeLine]]:
    """Each budget and rate node of the workspace's deployed routes, once per attached
    key name (once with no key when none is). A deployed version that no longer
    validates routes nothing (gateway/state/snapshot_routes.py), so it shows nothing."""
    routes = list(
        Route.objects.filter(workspace=workspace, deployed__isnull=False)
        .select_related("deployed")
        .order_by("slug")
    )
    if not routes:
        return [], []
    catalog = catalog_names()
    attached = KeySettings.objects.filter(workspace=workspace).names_by_route()
    budgets: list[BudgetLine] = []
    rates: list[RateNodeLine] = []
    for row in routes:
        version = row.deployed
        assert version is not None
        try:
            graph = parse_route(version.content, path="", catalog=catalog)
        except RouteInvalid:
            continue
        names = attached.get(row.slug) or [""]
        for node_id, node in sorted(graph.nodes.items()):
            if not isinstance(node, BudgetNode | RateLimitNode):
                continue
            label = f"{row.slug} v{version.number} node {node_id}"
            start, end = period_bounds(node.period, now)
            for name in names:
                counter = counter_name(key_scope(workspace.pk, name), node.period, now)
                counter = counter if name else ""  # no key: nothing is counted
                if isinstance(node, RateLimitNode):
                    rates.append(
                        RateNodeLine(label, node.period, node.requests, name, _utc(end), counter)
                    )
                    continue
                budgets.append(
                    BudgetLine(
                        source="route",
                        budget_id=None,
                        scope=f"key {name}" if name else "—",
                        key_name=name,
                        period=node.period,
                        limit_micros=node.limit_micros,
                        period_start=_utc(start),
                        resets_at=_utc(end),
                        counter=counter,
                        route=label,
                        note="" if name else "no key uses this route",
                    )
                )
    return budgets, rates


def _fired(lines: Iterable[BudgetLine]) -> dict[tuple[str, float], datetime]:
    """(counter, threshold) -> when it fired: the alerts of the current periods."""
    counters = {line.counter for line in lines if line.alerts and line.counter}
    if not counters:
        return {}
    rows = BudgetAlert.objects.filter(counter__in=counters)
    return {(row.counter, row.threshold): row.at for row in rows}


def _read(counters: Sequence[str]) -> dict[str, CounterState] | None:
    """The counters' state, or None when the store cannot answer."""
    if not counters:
        return {}
    try:
        return read_counters(counters)
    except ApiError as error:
        if error.code != STORE_UNAVAILABLE:
            raise
        return None


def budget_page(workspace: Workspace, now: float) -> BudgetPage:
    """Everything the page shows of `workspace` at `now` (epoch seconds)."""
    budgets = _configured(workspace, now)
    node_budgets, rate_nodes = _route_nodes(workspace, now)
    budgets += node_budgets
    counters = sorted(({b.counter for b in budgets} | {r.counter for r in rate_nodes}) - {""})
    states = _read(counters)
    fired = _fired(budgets)
    shown = tuple(
        replace(
            line,
            alerts=tuple(
                replace(a, fired_at=fired.get((line.counter, a.threshold))) for a in line.alerts
            ),
            spending=_state(line.counter, states),
        )
        for line in budgets
    )
    nodes = tuple(_used(line, states) for line in rate_nodes)
    rows = [
        row
        for row in RateLimit.objects.filter(workspace=workspace).order_by("key_name")
        if is_limiting(row)
    ]
    uses = read_limit_usage(rows, now)
    lines = tuple(
        RateLimitLine(row, None if uses is None else uses.get(row.key_name, {})) for row in rows
    )
    return BudgetPage(
        shown,
        lines,
        nodes,
        unavailable=states is None,
        limits_unavailable=uses is None,
        limits_shared=admission_state.stores().kind == "redis",
    )


def _state(counter: str, states: dict[str, CounterState] | None) -> CounterState | None:
    """A counter's state; None for no counter or a store that could not answer."""
    if states is None or not counter:
        return None
    return states.get(counter, CounterState())


def _used(line: RateNodeLine, states: dict[str, CounterState] | None) -> RateNodeLine:
    found = _state(line.counter, states)
    return line if found is None else replace(line, used=found.requests)
