"""Reading the configuration tables into a `Snapshot`: one loader per table or entry kind,
strung together by `load_snapshot` inside one transaction, so every table is read at the
same point in time. Synchronous; the holder (gateway/state/snapshot.py) runs it in the
database thread. Each row becomes a frozen value of gateway/state/snapshot_types.py, and
the workspace's stored `smart_routing` and `auto_router` JSON is read by the engine's own
parsers, which own their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction

from gateway.models import ConfigVersion
from gateway.state.snapshot_budgets import Governed, load_governance
from gateway.state.snapshot_keys import load_keys
from gateway.state.snapshot_routes import load_routes
from gateway.state.snapshot_types import (
    CredentialEntry,
    ModelEntry,
    ProviderEntry,
    Snapshot,
    VirtualEntry,
    WorkspaceEntry,
)
from routing.engine.adaptive import MIN_WEIGHT_FRACTION
from routing.engine.auto.settings import auto_settings
from routing.engine.benchmarks import catalog_scores
from routing.engine.names import name_index
from routing.engine.resolve import CatalogNames
from routing.engine.tiers.choose import tier_config
from routing.engine.types import EndpointInfo, PolicyView
from routing.models import Endpoint, Model, Provider, VirtualModel
from workspaces.models import Policy, ProviderCredential, Workspace
from workspaces.retention import DEFAULT_RETENTION
from workspaces.secrets import Sealed


@dataclass(frozen=True, slots=True)
class _EndpointTables:
    """The endpoint table, indexed the three ways the request path reads it."""

    by_model: dict[str, tuple[EndpointInfo, ...]]  # by model slug, in id order
    base_urls: dict[str, str]  # endpoint id -> base URL without a trailing slash
    timeouts: dict[str, dict[str, int]]  # endpoint id -> its timeout overrides


def load_snapshot() -> Snapshot:
    """Read the whole configuration (synchronous; run it off the event loop). Thirteen queries,
    whatever the size of the catalog."""
    with transaction.atomic():
        version = read_version()
        workspaces = _load_workspaces(_load_credentials())
        providers = _load_providers()
        model_rows = list(Model.objects.all())
        virtual = _load_virtual_models()
        endpoints = _load_endpoints()
        names = _name_index(model_rows)
        keys = load_keys(workspaces, names, virtual)
        catalog = CatalogNames(
            names=names, providers=frozenset(providers), virtual=frozenset(virtual)
        )
        routes = load_routes(catalog)
        governance = load_governance()
    workspaces = {
        pk: replace(entry, routes=routes.get(pk, entry.routes), **_governed(governance, pk, ""))
        for pk, entry in workspaces.items()
    }
    keys = {
        lookup: replace(entry, **_governed(governance, entry.workspace_id, entry.name))
        if (entry.workspace_id, entry.name) in governance and entry.name
        else entry
        for lookup, entry in keys.items()
    }
    return Snapshot(
        version=version,
        keys=keys,
        workspaces=workspaces,
        providers=providers,
        models=_model_entries(model_rows),
        names=names,
        endpoints=endpoints.by_model,
        base_urls=endpoints.base_urls,
        endpoint_timeouts=endpoints.timeouts,
        virtual=virtual,
        catalog=catalog,
    )


def read_version() -> int:
    """The configuration version stamp; 0 before the first write."""
    return ConfigVersion.objects.filter(pk=1).values_list("version", flat=True).first() or 0


def _governed(
    governance: dict[tuple[int, str], Governed], workspace_id: int, key_name: str
) -> dict[str, Any]:
    found = governance.get((workspace_id, key_name))
    return {} if found is None else {"budgets": found.budgets, "limits": found.limits}


def _load_credentials() -> dict[int, dict[str, CredentialEntry]]:
    """BYOK credentials by workspace id, then provider slug (two queries: the rows and
    their key restrictions)."""
    credentials: dict[int, dict[str, CredentialEntry]] = {}
    for cred in ProviderCredential.objects.prefetch_related("api_keys"):
        credentials.setdefault(cred.workspace_id, {})[cred.provider_slug] = CredentialEntry(
            sealed=Sealed(bytes(cred.ciphertext), bytes(cred.nonce), cred.key_id),
            models=frozenset(cred.allowed_models),
            api_key_ids=frozenset(k.pk for k in cred.api_keys.all()),
            managed_fallback=cred.managed_fallback,
        )
    return credentials


def _load_workspaces(
    credentials: dict[int, dict[str, CredentialEntry]],
) -> dict[int, WorkspaceEntry]:
    """Every workspace with its policy (one joined query) and its `credentials`."""
    return {
        ws.pk: _workspace_entry(ws, credentials.get(ws.pk, {}))
        for ws in Workspace.objects.select_related("policy")
    }


def _workspace_entry(ws: Workspace, credentials: dict[str, CredentialEntry]) -> WorkspaceEntry:
    """A workspace without a policy row gets the policy defaults and no overrides."""
    policy: Policy | None = getattr(ws, "policy", None)
    return WorkspaceEntry(
        id=ws.pk,
        slug=ws.slug,
        policy=policy_view(policy),
        policy_id=policy.pk if policy else None,
        retention=policy.retention if policy else DEFAULT_RETENTION,
        credentials=credentials,
        timeouts=dict(policy.timeouts) if policy else {},
        cooldown=dict(policy.cooldown) if policy else {},
        tiers=tier_config(ws.smart_routing or {}),
        auto=auto_settings(ws.auto_router or {}),
        created=int(ws.created_at.timestamp()),
    )


def policy_view(policy: Policy | None) -> PolicyView:
    """A policy row — stored, or unsaved (the console's preview) — as the engine reads it."""
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
        data_classes=tuple(policy.data_classes),
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


def _load_providers() -> dict[str, ProviderEntry]:
    """Providers by slug, with the sealed managed credential when one is stored."""
    return {
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


def _model_entries(model_rows: list[Model]) -> dict[str, ModelEntry]:
    return {
        m.slug: ModelEntry(
            m.slug, m.version, frozenset(m.capabilities), int(m.created_at.timestamp())
        )
        for m in model_rows
    }


def _name_index(model_rows: list[Model]) -> dict[str, str]:
    return name_index((row.slug, row.aliases) for row in model_rows)


def _load_virtual_models() -> dict[str, VirtualEntry]:
    """Virtual models by slug; a target's weight defaults to 1, the adaptive objective to
    balanced and its floor to MIN_WEIGHT_FRACTION (the defaults of VirtualEntry)."""
    return {
        v.slug: VirtualEntry(
            slug=v.slug,
            strategy=v.strategy,
            targets=tuple((t["model"], float(t.get("weight", 1))) for t in v.targets),
            objective=v.adaptive.get("objective", "balanced"),
            min_weight_fraction=float(v.adaptive.get("min_weight_fraction", MIN_WEIGHT_FRACTION)),
            created=int(v.created_at.timestamp()),
        )
        for v in VirtualModel.objects.all()
    }


def catalog_endpoints() -> dict[str, tuple[EndpointInfo, ...]]:
    """Every endpoint as the engine reads it, by model slug (the console's policy preview)."""
    return _load_endpoints().by_model


def _load_endpoints() -> _EndpointTables:
    """Every endpoint with its provider and model (one joined query), in id order."""
    by_model: dict[str, list[EndpointInfo]] = {}
    base_urls: dict[str, str] = {}
    timeouts: dict[str, dict[str, int]] = {}
    for row in Endpoint.objects.select_related("provider", "model").order_by("id"):
        by_model.setdefault(row.model.slug, []).append(_endpoint_info(row))
        base_urls[row.id] = (row.base_url or row.provider.base_url).rstrip("/")
        timeouts[row.id] = dict(row.timeouts)
    return _EndpointTables(
        by_model={slug: tuple(infos) for slug, infos in by_model.items()},
        base_urls=base_urls,
        timeouts=timeouts,
    )


def _endpoint_info(row: Endpoint) -> EndpointInfo:
    """An endpoint row (provider and model joined) as the engine's value."""
    model = row.model
    return EndpointInfo(
        id=row.id,
        provider=row.provider.slug,
        model=model.slug,
        upstream_model=row.upstream_model,
        region=row.region,
        status=row.status,
        sovereignty_class=row.sovereignty_class,
        partner=row.partner,
        price_input=float(row.price_input),
        price_output=float(row.price_output),
        capabilities=frozenset(model.capabilities),
        context_window=model.context_window,
        parameters_b=model.parameters_b,
        strong_languages=frozenset(model.strong_languages),
        task_tags=frozenset(model.task_tags),
        documentation_completeness=model.documentation_completeness,
        benchmarks=catalog_scores(model.benchmarks),
        data_classes=frozenset(row.data_classes),
    )
