"""The database as a configuration document (the shape `apply` reads), for `manage.py export`.

Never exports a secret: a stored provider key (managed or BYOK) becomes `api_key_env`
with a conventional variable name the operator sets before applying the file elsewhere.
Every field is written out, so applying an export to the database it came from changes
nothing (given those variables hold the stored keys).
"""

from __future__ import annotations

import re
from datetime import UTC
from decimal import Decimal
from typing import Any

from budgets.models import Budget, RateLimit
from declarative.budgets import BUDGET_PERIODS
from presets.models import KeySettings, Preset, Route
from routing.models import Endpoint, Provider, VirtualModel
from routing.models import Model as CatalogModel
from workspaces.models import Policy, ProviderCredential, Workspace

MICROS_PER_USD = Decimal(1_000_000)


def export_config(*, workspace: str | None = None) -> dict[str, Any]:
    """Everything, or only the workspace `workspace` (its policy, credentials, routing
    settings, presets, key settings and deployed routes; not the catalog). Raises
    LookupError for an unknown workspace."""
    workspaces = Workspace.objects.order_by("slug")
    if workspace is not None:
        workspaces = workspaces.filter(slug=workspace)
        if not workspaces.exists():
            raise LookupError(f"no workspace {workspace!r}")
        return {"workspaces": [_workspace(row) for row in workspaces]}
    return {
        "providers": [_provider(row) for row in Provider.objects.order_by("slug")],
        "models": [_model(row) for row in CatalogModel.objects.order_by("slug")],
        "endpoints": [
            _endpoint(row)
            for row in Endpoint.objects.select_related("provider", "model").order_by("id")
        ],
        "virtual_models": [
            {"slug": row.slug, "strategy": row.strategy, "targets": row.targets, **row.adaptive}
            for row in VirtualModel.objects.order_by("slug")
        ],
        "workspaces": [_workspace(row) for row in workspaces],
    }


def secret_variables(document: dict[str, Any]) -> list[str]:
    """The `api_key_env` names in an exported document, in order."""
    entries = list(document.get("providers", []))
    for workspace in document.get("workspaces", []):
        entries += workspace.get("credentials", [])
    return [entry["api_key_env"] for entry in entries if "api_key_env" in entry]


def env_name(*parts: str) -> str:
    """`SWITCHYARD_<PARTS>_KEY` in upper snake case: ("provider", "groq") -> ..._GROQ_KEY."""
    words = [re.sub(r"[^A-Za-z0-9]+", "_", part).strip("_").upper() for part in parts]
    return "_".join(["SWITCHYARD", *words, "KEY"])


def _number(value: Decimal) -> int | float:
    """A Decimal column as the plain number a person would write (5, not 5.000000)."""
    return int(value) if value == value.to_integral_value() else float(value)


def _provider(row: Provider) -> dict[str, Any]:
    data = {
        "slug": row.slug,
        "name": row.name,
        "api_style": row.api_style,
        "base_url": row.base_url,
    }
    if row.credential_ciphertext:
        data["api_key_env"] = env_name("provider", row.slug)
    return data


def _model(row: CatalogModel) -> dict[str, Any]:
    data: dict[str, Any] = {
        "slug": row.slug,
        "aliases": row.aliases,
        "capabilities": row.capabilities,
        "context_window": row.context_window,
    }
    if row.parameters_b is not None:
        data["parameters_b"] = _number(Decimal(str(row.parameters_b)))
    data.update(
        strong_languages=row.strong_languages,
        task_tags=row.task_tags,
        documentation_completeness=row.documentation_completeness,
        version=row.version,
        benchmarks=row.benchmarks,
    )
    return data


def _endpoint(row: Endpoint) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": row.id,
        "provider": row.provider.slug,
        "model": row.model.slug,
        "upstream_model": row.upstream_model,
        "region": row.region,
    }
    if row.base_url:
        data["base_url"] = row.base_url
    data.update(
        price={"input": _number(row.price_input), "output": _number(row.price_output)},
        status=row.status,
        sovereignty_class=row.sovereignty_class,
        partner=row.partner,
        timeouts=row.timeouts,
    )
    if row.data_classes:
        data["data_classes"] = row.data_classes
    return data


def _workspace(row: Workspace) -> dict[str, Any]:
    data: dict[str, Any] = {"slug": row.slug, "name": row.name}
    policy = Policy.objects.filter(workspace=row).first()
    if policy is not None:
        data["policy"] = policy_document(policy)
    credentials = ProviderCredential.objects.filter(workspace=row).order_by("provider_slug")
    if credentials:
        data["credentials"] = [
            {
                "provider": cred.provider_slug,
                "api_key_env": env_name("workspace", row.slug, cred.provider_slug),
                "models": cred.allowed_models,
                "managed_fallback": cred.managed_fallback,
            }
            for cred in credentials
        ]
    if row.smart_routing:
        data["smart_routing"] = row.smart_routing
    if row.auto_router:
        data["auto_router"] = row.auto_router
    presets = Preset.objects.filter(workspace=row).order_by("slug")
    if presets:
        data["presets"] = [
            {
                "slug": preset.slug,
                "allowed_models": preset.allowed_models,
                "provider_allow": preset.provider_allow,
                "provider_ignore": preset.provider_ignore,
                "default_prompt": preset.default_prompt,
                "default_params": preset.default_params,
            }
            for preset in presets
        ]
    budgets = _budgets(row)
    limits = {r.key_name: _limits(r) for r in RateLimit.objects.filter(workspace=row)}
    if budgets.get(""):
        data["budgets"] = budgets.pop("")
    if "" in limits:
        data["limits"] = limits.pop("")
    settings = KeySettings.objects.filter(workspace=row).select_related("preset")
    keys = {entry.name: _key_settings(entry) for entry in settings}
    for name in sorted({*keys, *budgets, *limits}):  # a budget needs no other setting
        entry = keys.setdefault(name, {"name": name})
        if budgets.get(name):
            entry["budget"] = budgets[name][0]  # one per key
        if name in limits:
            entry["limits"] = limits[name]
    if keys:
        data["keys"] = [keys[name] for name in sorted(keys)]
    routes = Route.objects.filter(workspace=row, deployed__isnull=False).order_by("slug")
    if routes:  # the version in effect of each deployed route, as it was written
        data["routes"] = [route.deployed.content for route in routes.select_related("deployed")]
    return data


def _budgets(row: Workspace) -> dict[str, list[dict[str, Any]]]:
    """Budgets by key name ("" = the workspace's own), in period order."""
    order = {period: i for i, period in enumerate(BUDGET_PERIODS)}
    found: dict[str, list[dict[str, Any]]] = {}
    for budget in sorted(Budget.objects.filter(workspace=row), key=lambda b: order[b.period]):
        usd = _number(Decimal(budget.limit_micros) / MICROS_PER_USD)
        entry = {"period": budget.period, "usd": usd, "alerts": budget.alerts}
        found.setdefault(budget.key_name, []).append(entry)
    return found


def _limits(row: RateLimit) -> dict[str, int]:
    kinds = ("requests_per_minute", "tokens_per_minute", "concurrent")
    return {kind: getattr(row, kind) for kind in kinds if getattr(row, kind) is not None}


def _key_settings(entry: KeySettings) -> dict[str, Any]:
    data: dict[str, Any] = {"name": entry.name}
    if entry.expires_at is not None:
        data["expires_at"] = entry.expires_at.astimezone(UTC).isoformat()
    data["allowed_models"] = entry.allowed_models
    if entry.preset is not None:
        data["preset"] = entry.preset.slug
    data["routes"] = entry.routes
    return data


def policy_document(policy: Policy) -> dict[str, Any]:
    """A stored policy as the `policy:` section of a config file (the console edits it so)."""
    lists = ("allowed_residency", "allowed_regions", "provider_allow", "provider_deny")
    data: dict[str, Any] = {name: getattr(policy, name) for name in lists}
    data.update(model_allow=policy.model_allow, model_deny=policy.model_deny)
    data["partners"] = policy.partners
    caps = {"prompt": policy.max_price_prompt, "completion": policy.max_price_completion}
    if any(cap is not None for cap in caps.values()):
        data["max_price"] = {key: _number(cap) for key, cap in caps.items() if cap is not None}
    data.update(retention=policy.retention, data_classes=policy.data_classes)
    if policy.daily_budget_micros is not None:
        data["daily_budget"] = _number(Decimal(policy.daily_budget_micros) / MICROS_PER_USD)
    data.update(
        routing_mode=policy.routing_mode,
        max_attempts=policy.max_attempts,
        timeouts=policy.timeouts,
        cooldown=policy.cooldown,
    )
    return data
