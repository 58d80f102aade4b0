"""The values of a configuration snapshot: `Snapshot` and one frozen entry type per table
it holds (keys, workspaces, credentials, providers, models, virtual models).

They live apart from the loader (gateway/state/snapshot_load.py) and the holder
(gateway/state/snapshot.py) so that both can import them without importing each other;
gateway/state/snapshot.py re-exports every name here. No database access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from budgets.rules.budgets import BudgetRule
from budgets.rules.limits import LimitSpec
from routing.engine.adaptive import MIN_WEIGHT_FRACTION
from routing.engine.auto.settings import AutoSettings
from routing.engine.key_scope import PresetView
from routing.engine.resolve import CatalogNames
from routing.engine.routes import Route
from routing.engine.tiers.choose import TierConfig
from routing.engine.types import EndpointInfo, PolicyView
from workspaces.secrets import Sealed


@dataclass(frozen=True, slots=True)
class KeyEntry:
    pk: int
    workspace_id: int
    secret_hmac: str
    expires_at: float | None  # epoch seconds: the earlier of the key's and its settings'
    name: str = ""
    # Its settings (R-KEY-1, gateway/state/snapshot_keys.py): the preset, the names it may
    # request (None = any), its workspace's policy narrowed to both (None = the workspace's
    # own), and the route slugs tried in order (D-23).
    preset: PresetView | None = None
    allowed: frozenset[str] | None = None
    policy: PolicyView | None = None
    routes: tuple[str, ...] = ()
    # Its name's budgets and rate limits (R-LIM-1/2, gateway/state/snapshot_budgets.py).
    budgets: tuple[BudgetRule, ...] = ()
    limits: LimitSpec | None = None


@dataclass(frozen=True, slots=True)
class CredentialEntry:
    sealed: Sealed
    models: frozenset[str]  # empty = every model
    api_key_ids: frozenset[int]  # empty = every key
    managed_fallback: bool = False  # may a failed BYOK request use managed credentials


@dataclass(frozen=True, slots=True)
class DeployedRoute:
    """A route's deployed version (R-ROUTE-2). `route` is None when the stored version no
    longer validates against the catalog (a model it names was removed): requests it would
    handle are refused rather than routed some other way (`problem` says why)."""

    slug: str
    version: int
    route: Route | None
    problem: str = ""
    # The periods its rate_limit and budget nodes read (admission/route_usage.py), worked
    # out once at load rather than by walking its nodes twice a request.
    periods: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    id: int
    slug: str
    policy: PolicyView
    policy_id: int | None
    retention: str
    credentials: dict[str, CredentialEntry]  # by provider slug
    timeouts: dict[str, int]  # connect_ms, ttft_ms, idle_ms, total_ms (policy overrides)
    cooldown: dict[str, float] = field(default_factory=dict)  # base_s, max_s (R-EXE-3)
    tiers: TierConfig | None = None  # smart tier routing; None = idle (R-TIER-1)
    auto: AutoSettings = field(default_factory=AutoSettings)  # auto router (R-AUTO-1, D-2)
    created: int = 0  # epoch seconds; `created` of its aliases in /v1/models
    routes: dict[str, DeployedRoute] = field(default_factory=dict)  # deployed, by slug
    budgets: tuple[BudgetRule, ...] = ()  # its own, `daily_budget` included (D-28)
    limits: LimitSpec | None = None


@dataclass(frozen=True, slots=True)
class ProviderEntry:
    slug: str
    api_style: str
    base_url: str
    managed: Sealed | None


@dataclass(frozen=True, slots=True)
class ModelEntry:
    slug: str
    version: str
    capabilities: frozenset[str]
    created: int = 0  # epoch seconds, for /v1/models


@dataclass(frozen=True, slots=True)
class VirtualEntry:
    slug: str
    strategy: str  # round_robin | cost | weighted_random | adaptive
    targets: tuple[tuple[str, float], ...]  # (model or virtual model slug, weight)
    objective: str = "balanced"  # adaptive only: how price enters the weight (R-EXE-5)
    min_weight_fraction: float = MIN_WEIGHT_FRACTION
    created: int = 0  # epoch seconds, for /v1/models


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: int
    keys: dict[str, KeyEntry]
    workspaces: dict[int, WorkspaceEntry]
    providers: dict[str, ProviderEntry]
    models: dict[str, ModelEntry]
    names: dict[str, str]  # every accepted spelling (slug, alias, bare name) -> slug
    endpoints: dict[str, tuple[EndpointInfo, ...]]  # by model slug
    base_urls: dict[str, str]  # endpoint id -> base URL
    endpoint_timeouts: dict[str, dict[str, int]] = field(default_factory=dict)
    virtual: dict[str, VirtualEntry] = field(default_factory=dict)
    catalog: CatalogNames = field(default_factory=lambda: CatalogNames({}, frozenset()))

    @property
    def all_endpoints(self) -> tuple[EndpointInfo, ...]:
        """Every endpoint of every model: the candidates of the auto router."""
        return tuple(e for endpoints in self.endpoints.values() for e in endpoints)
