"""The request path's view of configuration: one immutable `Snapshot` per worker.

Loading reads every table the request path needs once; after that a request touches no
database. Every configuration write bumps `ConfigVersion` (a signal receiver does it on
commit, so admin edits, `apply` and services alike invalidate); each worker checks the
stamp at most every `snapshot_poll_s` in the background and swaps in a new snapshot when
it changed. A request never waits for that check: it uses the snapshot it has.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from django.db import models, transaction
from django.db.models import F
from django.db.models.signals import m2m_changed, post_delete, post_save

from gateway.db_thread import in_db_thread
from gateway.models import ConfigVersion
from routing.adaptive import MIN_WEIGHT_FRACTION
from routing.autorouter import AutoSettings, auto_settings
from routing.benchmarks import catalog_scores
from routing.models import Endpoint, Model, Provider, VirtualModel
from routing.resolve import CatalogNames
from routing.tiers import TierConfig, tier_config
from routing.types import EndpointInfo, PolicyView
from workspaces.models import ApiKey, Policy, ProviderCredential, Workspace
from workspaces.secrets import Sealed

log = logging.getLogger(__name__)

CONFIG_MODELS: tuple[type[models.Model], ...] = (
    Workspace, ApiKey, ProviderCredential, Policy, Provider, Model, Endpoint, VirtualModel,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class KeyEntry:
    pk: int
    workspace_id: int
    secret_hmac: str
    expires_at: float | None  # epoch seconds


@dataclass(frozen=True, slots=True)
class CredentialEntry:
    sealed: Sealed
    models: frozenset[str]  # empty = every model
    api_key_ids: frozenset[int]  # empty = every key


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


def _policy_view(policy: Policy | None) -> PolicyView:
    if policy is None:
        return PolicyView()

    def price(value: object) -> float | None:
        return None if value is None else float(value)  # type: ignore[arg-type]

    return PolicyView(
        allowed_residency=_nested_classes(policy.allowed_residency),
        allowed_regions=frozenset(policy.allowed_regions),
        provider_allow=frozenset(policy.provider_allow),
        provider_deny=frozenset(policy.provider_deny),
        model_allow=frozenset(policy.model_allow),
        model_deny=frozenset(policy.model_deny),
        partners=policy.partners,
        max_price_prompt=price(policy.max_price_prompt),
        max_price_completion=price(policy.max_price_completion),
        routing_mode=policy.routing_mode,
        max_attempts=policy.max_attempts,
    )


def _nested_classes(allowed: list[str]) -> frozenset[str]:
    """Residency classes nest (eu-owned ⊂ eu-hosted ⊂ any): a policy allowing `eu-hosted`
    admits EU-owned endpoints too, and one allowing `any` restricts nothing."""
    classes = set(allowed)
    if "any" in classes:
        return frozenset()
    if "eu-hosted" in classes:
        classes.add("eu-owned")
    return frozenset(classes)


def _name_index(model_rows: list[Model]) -> dict[str, str]:
    """Slug, aliases, and the bare name when unique in the catalog (SPEC D-11)."""
    names: dict[str, str] = {}
    bare_count: dict[str, int] = {}
    for row in model_rows:
        bare = row.slug.split("/", 1)[-1]
        bare_count[bare] = bare_count.get(bare, 0) + 1
    for row in model_rows:
        bare = row.slug.split("/", 1)[-1]
        if bare_count[bare] == 1:
            names.setdefault(bare, row.slug)
        for alias in row.aliases:
            names.setdefault(alias, row.slug)
    for row in model_rows:
        names[row.slug] = row.slug  # a slug always wins over an alias
    return names


def load_snapshot() -> Snapshot:
    """Read the whole configuration (synchronous; run it off the event loop)."""
    with transaction.atomic():
        version = ConfigVersion.objects.filter(pk=1).values_list("version", flat=True).first()
        keys = {
            k.lookup_id: KeyEntry(
                pk=k.pk,
                workspace_id=k.workspace_id,
                secret_hmac=k.secret_hmac,
                expires_at=k.expires_at.timestamp() if k.expires_at else None,
            )
            for k in ApiKey.objects.filter(revoked_at__isnull=True)
        }
        credentials: dict[int, dict[str, CredentialEntry]] = {}
        for cred in ProviderCredential.objects.prefetch_related("api_keys"):
            credentials.setdefault(cred.workspace_id, {})[cred.provider_slug] = CredentialEntry(
                sealed=Sealed(bytes(cred.ciphertext), bytes(cred.nonce), cred.key_id),
                models=frozenset(cred.allowed_models),
                api_key_ids=frozenset(k.pk for k in cred.api_keys.all()),
            )
        workspaces = {}
        for ws in Workspace.objects.select_related("policy"):
            policy = getattr(ws, "policy", None)
            workspaces[ws.pk] = WorkspaceEntry(
                id=ws.pk,
                slug=ws.slug,
                policy=_policy_view(policy),
                policy_id=policy.pk if policy else None,
                retention=policy.retention if policy else "30d",
                credentials=credentials.get(ws.pk, {}),
                timeouts=dict(policy.timeouts) if policy else {},
                cooldown=dict(policy.cooldown) if policy else {},
                tiers=tier_config(ws.smart_routing or {}),
                auto=auto_settings(ws.auto_router or {}),
                created=int(ws.created_at.timestamp()),
            )
        providers = {
            p.slug: ProviderEntry(
                slug=p.slug,
                api_style=p.api_style,
                base_url=p.base_url,
                managed=Sealed(
                    bytes(p.credential_ciphertext), bytes(p.credential_nonce), p.credential_key_id
                )
                if p.credential_ciphertext
                else None,
            )
            for p in Provider.objects.all()
        }
        model_rows = list(Model.objects.all())
        virtual = {
            v.slug: VirtualEntry(
                slug=v.slug,
                strategy=v.strategy,
                targets=tuple((t["model"], float(t.get("weight", 1))) for t in v.targets),
                objective=v.adaptive.get("objective", "balanced"),
                min_weight_fraction=float(
                    v.adaptive.get("min_weight_fraction", MIN_WEIGHT_FRACTION)
                ),
                created=int(v.created_at.timestamp()),
            )
            for v in VirtualModel.objects.all()
        }
        endpoint_rows = list(Endpoint.objects.select_related("provider", "model").order_by("id"))
    by_model: dict[str, list[EndpointInfo]] = {}
    base_urls: dict[str, str] = {}
    timeouts: dict[str, dict[str, int]] = {}
    for row in endpoint_rows:
        by_model.setdefault(row.model.slug, []).append(
            EndpointInfo(
                id=row.id,
                provider=row.provider.slug,
                model=row.model.slug,
                upstream_model=row.upstream_model,
                region=row.region,
                status=row.status,
                sovereignty_class=row.sovereignty_class,
                partner=row.partner,
                price_input=float(row.price_input),
                price_output=float(row.price_output),
                capabilities=frozenset(row.model.capabilities),
                context_window=row.model.context_window,
                parameters_b=row.model.parameters_b,
                strong_languages=frozenset(row.model.strong_languages),
                task_tags=frozenset(row.model.task_tags),
                documentation_completeness=row.model.documentation_completeness,
                benchmarks=catalog_scores(row.model.benchmarks),
            )
        )
        base_urls[row.id] = (row.base_url or row.provider.base_url).rstrip("/")
        timeouts[row.id] = dict(row.timeouts)
    return Snapshot(
        version=version or 0,
        keys=keys,
        workspaces=workspaces,
        providers=providers,
        models={
            m.slug: ModelEntry(
                m.slug, m.version, frozenset(m.capabilities), int(m.created_at.timestamp())
            )
            for m in model_rows
        },
        names=_name_index(model_rows),
        endpoints={slug: tuple(rows) for slug, rows in by_model.items()},
        base_urls=base_urls,
        endpoint_timeouts=timeouts,
        virtual=virtual,
        catalog=CatalogNames(
            names=_name_index(model_rows),
            providers=frozenset(providers),
            virtual=frozenset(virtual),
        ),
    )


def _hint_if_tiers_idle(snapshot: Snapshot) -> None:
    if not any(ws.tiers for ws in snapshot.workspaces.values()):
        log.info(
            "smart tier routing is idle: no workspace configures tiered aliases "
            "(smart_routing.aliases, docs/smart-routing.md)"
        )


def _read_version() -> int:
    return ConfigVersion.objects.filter(pk=1).values_list("version", flat=True).first() or 0


class SnapshotHolder:
    """Per-process holder: `await current()` returns a snapshot, reloading in the
    background when the version stamp moved (stale-while-revalidate)."""

    def __init__(self, poll_s: float) -> None:
        self.poll_s = poll_s
        self._snapshot: Snapshot | None = None
        self._checked_at = 0.0
        self._refresh: asyncio.Task[None] | None = None
        self._first_load = asyncio.Lock()

    async def current(self) -> Snapshot:
        snapshot = self._snapshot
        if snapshot is None:
            async with self._first_load:
                if self._snapshot is None:
                    self._snapshot = await in_db_thread(load_snapshot)()
                    self._checked_at = time.monotonic()
                    log.info("configuration snapshot loaded at version %s", self._snapshot.version)
                    _hint_if_tiers_idle(self._snapshot)
            return self._snapshot
        if time.monotonic() - self._checked_at > self.poll_s and self._refresh is None:
            self._checked_at = time.monotonic()
            self._refresh = asyncio.create_task(self._check())
        return snapshot

    async def reload(self) -> Snapshot:
        self._snapshot = await in_db_thread(load_snapshot)()
        self._checked_at = time.monotonic()
        return self._snapshot

    async def _check(self) -> None:
        try:
            version = await in_db_thread(_read_version)()
            if self._snapshot is None or version != self._snapshot.version:
                self._snapshot = await in_db_thread(load_snapshot)()
                log.info("configuration snapshot reloaded at version %s", version)
        except Exception:  # keep serving the old snapshot; try again next poll
            log.exception("configuration snapshot check failed")
        finally:
            self._refresh = None


def bump_version() -> None:
    """Mark configuration changed; call inside the writing transaction."""
    updated = ConfigVersion.objects.filter(pk=1).update(version=F("version") + 1)
    if not updated:
        ConfigVersion.objects.get_or_create(pk=1, defaults={"version": 1})


def _on_config_change(sender: type[models.Model], **kwargs: object) -> None:
    if kwargs.get("raw"):
        return  # fixture loading
    transaction.on_commit(bump_version)


def connect_invalidation_signals() -> None:
    for model in CONFIG_MODELS:
        post_save.connect(_on_config_change, sender=model, dispatch_uid=f"snap-save-{model}")
        post_delete.connect(_on_config_change, sender=model, dispatch_uid=f"snap-del-{model}")
    m2m_changed.connect(
        _on_config_change, sender=ProviderCredential.api_keys.through, dispatch_uid="snap-m2m"
    )
