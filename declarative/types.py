"""The validated configuration: frozen values `declarative.schema.parse_config` produces
and `management_api.config_apply` writes. Field names follow the database columns, not the file's
nesting (`price.input` is `price_input`). Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The enum values the models accept; the caller passes the tuples from the models."""

    api_styles: tuple[str, ...]
    capabilities: tuple[str, ...]
    sovereignty_classes: tuple[str, ...]
    endpoint_statuses: tuple[str, ...]
    virtual_strategies: tuple[str, ...]
    residency_classes: tuple[str, ...]
    routing_modes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Existing:
    """What the database already holds, so the file may reference it."""

    providers: frozenset[str] = frozenset()
    models: frozenset[str] = frozenset()
    virtual_models: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # -> targets
    presets: Mapping[str, frozenset[str]] = field(default_factory=dict)  # by workspace slug
    routes: Mapping[str, frozenset[str]] = field(default_factory=dict)  # by workspace slug
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # model -> aliases


@dataclass(frozen=True, slots=True)
class Secret:
    """A provider key from the file or the environment; `repr` never shows it."""

    plaintext: str = field(repr=False)
    env: str | None  # the environment variable it was read from, if any


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    slug: str
    name: str
    api_style: str
    base_url: str
    api_key: Secret | None  # None keeps the stored managed credential


@dataclass(frozen=True, slots=True)
class ModelSpec:
    slug: str
    aliases: tuple[str, ...]
    capabilities: tuple[str, ...]
    context_window: int
    parameters_b: float | None
    strong_languages: tuple[str, ...]
    task_tags: tuple[str, ...]
    documentation_completeness: float
    version: str
    benchmarks: Mapping[str, Any]  # id → score, or {score, source}


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    id: str
    provider: str
    model: str
    upstream_model: str
    region: str
    base_url: str  # "" = the provider's
    price_input: Decimal  # USD per 1M tokens
    price_output: Decimal
    status: str
    sovereignty_class: str
    partner: bool
    timeouts: Mapping[str, int]
    data_classes: tuple[str, ...] = ()  # cleared for (D-22); empty = every class


@dataclass(frozen=True, slots=True)
class VirtualModelSpec:
    slug: str
    strategy: str
    targets: tuple[Mapping[str, Any], ...]  # {"model": slug, "weight": number}, as stored
    adaptive: Mapping[str, Any] = field(default_factory=dict)  # objective, min_weight_fraction


@dataclass(frozen=True, slots=True)
class PolicySpec:
    allowed_residency: tuple[str, ...]
    allowed_regions: tuple[str, ...]
    provider_allow: tuple[str, ...]
    provider_deny: tuple[str, ...]
    model_allow: tuple[str, ...]
    model_deny: tuple[str, ...]
    partners: bool
    max_price_prompt: Decimal | None  # USD per 1M tokens; None = no cap
    max_price_completion: Decimal | None
    retention: str
    data_classes: tuple[str, ...]
    daily_budget_micros: int | None  # USD × 1e6; None = no budget
    routing_mode: str
    max_attempts: int
    timeouts: Mapping[str, int]
    cooldown: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class CredentialSpec:
    provider: str
    api_key: Secret
    allowed_models: tuple[str, ...]
    managed_fallback: bool


@dataclass(frozen=True, slots=True)
class PresetSpec:
    slug: str
    allowed_models: tuple[str, ...]
    provider_allow: tuple[str, ...]
    provider_ignore: tuple[str, ...]
    default_prompt: str
    default_params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    """A spending cap per UTC calendar period (R-LIM-2)."""

    period: str  # daily | weekly | monthly
    limit_micros: int
    alerts: tuple[float, ...]  # fractions of the cap, ascending


@dataclass(frozen=True, slots=True)
class LimitsSpec:
    """Rate limits (R-LIM-1); None = no limit of that kind."""

    requests_per_minute: int | None
    tokens_per_minute: int | None
    concurrent: int | None


@dataclass(frozen=True, slots=True)
class KeySpec:
    """Settings for the workspace's API key of `name` (D-24)."""

    name: str
    expires_at: datetime | None  # aware, UTC when the file gave no zone
    allowed_models: tuple[str, ...]  # patterns
    preset: str | None  # a preset slug of the workspace
    routes: tuple[str, ...]  # route slugs, tried in order (D-23)
    budget: BudgetSpec | None = None  # the entry is the key's whole truth: None = no budget
    limits: LimitsSpec | None = None


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """A dynamic route, validated by the engine; `content` is stored as written."""

    slug: str
    content: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class WorkspaceSpec:
    """A workspace; a nested section that is None was absent and is left as stored."""

    slug: str
    name: str
    policy: PolicySpec | None
    credentials: tuple[CredentialSpec, ...]
    smart_routing: Mapping[str, Any] | None
    auto_router: Mapping[str, Any] | None
    presets: tuple[PresetSpec, ...]
    keys: tuple[KeySpec, ...] = ()
    routes: tuple[RouteSpec, ...] = ()
    budgets: tuple[BudgetSpec, ...] | None = None  # None: absent, the stored ones stay
    limits: LimitsSpec | None = None  # None: absent, the stored ones stay


@dataclass(frozen=True, slots=True)
class Config:
    providers: tuple[ProviderSpec, ...] = ()
    models: tuple[ModelSpec, ...] = ()
    endpoints: tuple[EndpointSpec, ...] = ()
    virtual_models: tuple[VirtualModelSpec, ...] = ()
    workspaces: tuple[WorkspaceSpec, ...] = ()
