"""Applying a declarative configuration (docs/configuration.md) to the database.

`apply_config` validates the whole file first (`schema.parse_config`, with what the
database already holds as context), then creates or updates every row in one transaction
and audits it there (`audit.events.record_event`, R-OBS-4): one `config.apply` event for
the run (no workspace: the report's counts and change list, and the before/after of each
catalog row it changed), and one per workspace whose rows it changed (the before/after of
each), so a workspace's audit log shows what apply did to it and nothing of the others.
Routes are audited by their own `route.save` / `route.deploy` events (presets/services.py).
A secret shows as `[secret]`, whether it was set (before None) or replaced.

Rows are matched by slug (by id for endpoints); rows absent from the file are left alone.
A row whose values already match is not saved, which makes a second apply of the same file
a no-op. Secrets are compared by decrypting what is stored, because every seal produces a
new ciphertext.

Every write goes through `Model.save()`, so the snapshot's post_save receivers bump the
configuration version on commit; nothing here uses `QuerySet.update()` or `bulk_create`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from audit.events import diff, record_event
from budgets.models import Budget, RateLimit
from declarative.schema import parse_config
from declarative.types import (
    BudgetSpec,
    Config,
    Existing,
    LimitsSpec,
    RouteSpec,
    Secret,
    Vocabulary,
    WorkspaceSpec,
)
from management_api.config_export import export_config
from presets.models import KeySettings, Preset, Route
from presets.services import deploy_route, save_route
from routing import models as routing
from routing.models import Endpoint, Provider, VirtualModel
from routing.models import Model as CatalogModel
from workspaces import models as tenancy
from workspaces.models import Policy, ProviderCredential, Workspace
from workspaces.secrets import DecryptionError, Sealed, owner_aad, seal, unseal

__all__ = ["KINDS", "ApplyReport", "KindCounts", "apply_config", "export_config"]

KINDS = (
    "provider",
    "model",
    "endpoint",
    "virtual_model",
    "workspace",
    "policy",
    "credential",
    "preset",
    "key",
    "route",
    "budget",
    "limit",
)
ACTION = "config.apply"


@dataclass(frozen=True, slots=True)
class KindCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass(frozen=True, slots=True)
class ApplyReport:
    """What an apply did. `changes` names rows and changed fields, never values."""

    counts: Mapping[str, KindCounts]  # every kind in KINDS, in that order
    changes: tuple[str, ...]  # "created provider groq", "updated endpoint e1: price_input"
    dry_run: bool

    @property
    def changed(self) -> bool:
        return any(c.created or c.updated for c in self.counts.values())

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {
            kind: {"created": c.created, "updated": c.updated, "unchanged": c.unchanged}
            for kind, c in self.counts.items()
        }

    def summary(self) -> str:
        """One line: `2 created, 1 updated, 14 unchanged`."""
        outcomes = ("created", "updated", "unchanged")
        totals = {name: sum(getattr(c, name) for c in self.counts.values()) for name in outcomes}
        return ", ".join(f"{total} {name}" for name, total in totals.items())

    def render(self) -> str:
        """The command's output: one line per kind, then one per change."""
        lines = [
            f"{kind:<14} created {c.created:>3}  updated {c.updated:>3}  unchanged {c.unchanged:>3}"
            for kind, c in self.counts.items()
        ]
        lines += self.changes or ("no changes",)
        if self.dry_run:
            lines.append("dry run: nothing was written")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Row:
    """Which row of the file: for the report's lines and the audit's objects."""

    kind: str  # one of KINDS
    label: str  # `groq`, `acme/groq`, `acme/* daily`
    workspace: str | None = None  # the slug of the workspace it belongs to; None: the catalog


@dataclass
class _Tally:
    counts: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0, 0] for k in KINDS})
    changes: list[str] = field(default_factory=list)
    # per workspace slug (None: the catalog), each changed row's kind, name and field diff
    objects: dict[str | None, list[dict[str, Any]]] = field(default_factory=dict)

    def record(
        self, row: _Row, created: bool, changed: list[str], audited: Mapping[str, Any]
    ) -> None:
        if created:
            self.counts[row.kind][0] += 1
            self.changes.append(f"created {row.kind} {row.label}")
        elif changed:
            self.counts[row.kind][1] += 1
            self.changes.append(f"updated {row.kind} {row.label}: {', '.join(changed)}")
        else:
            self.counts[row.kind][2] += 1
        self._audit(row, audited)

    def removed(self, row: _Row, before: Mapping[str, Any]) -> None:
        self.counts[row.kind][1] += 1
        self.changes.append(f"removed {row.kind} {row.label}")
        self._audit(row, diff(before, None))

    def _audit(self, row: _Row, changes: Mapping[str, Any]) -> None:
        if changes:
            entry = {"kind": row.kind, "name": row.label, "changes": dict(changes)}
            self.objects.setdefault(row.workspace, []).append(entry)

    def report(self, *, dry_run: bool) -> ApplyReport:
        counts = {kind: KindCounts(*numbers) for kind, numbers in self.counts.items()}
        return ApplyReport(counts=counts, changes=tuple(self.changes), dry_run=dry_run)


def vocabulary() -> Vocabulary:
    """The enum values of the models, for the pure schema."""
    return Vocabulary(
        api_styles=routing.API_STYLES,
        capabilities=routing.CAPABILITIES,
        sovereignty_classes=routing.SOVEREIGNTY_CLASSES,
        endpoint_statuses=routing.ENDPOINT_STATUSES,
        virtual_strategies=routing.VIRTUAL_STRATEGIES,
        residency_classes=tenancy.RESIDENCY_CLASSES,
        routing_modes=tenancy.ROUTING_MODES,
    )


def workspace_section(slug: str, name: str, section: str, value: Any) -> dict[str, Any]:
    """A config file holding only the `section` (policy, presets) of workspace `slug`:
    `apply` leaves every other section of it as stored. What the console's forms and the
    management API's `policy` hand to `apply_config`."""
    return {"workspaces": [{"slug": slug, "name": name, section: value}]}


def apply_config(
    data: Mapping[str, Any] | None,
    *,
    actor: str,
    environ: Mapping[str, str] = os.environ,
    target: str = "",
    dry_run: bool = False,
    deploy: bool = False,
) -> ApplyReport:
    """Validate `data` (parsed YAML), then create/update everything in one transaction.

    Raises `declarative.fields.ConfigError` with every problem and writes nothing when the file
    is invalid. With `dry_run` the writes run and are rolled back (no version bump, no
    AdminEvent), so the report shows what would change. A changed route becomes a new draft
    version; `deploy` also puts each route of the file in effect at its newest version.
    """
    with transaction.atomic():
        config = parse(data, environ=environ)
        tally = _Tally()
        _write(config, tally, actor=actor, deploy=deploy)
        report = tally.report(dry_run=dry_run)
        _record_events(tally, report, actor=actor, target=target)
        if dry_run:
            transaction.set_rollback(True)
    return report


def parse(data: Mapping[str, Any] | None, *, environ: Mapping[str, str] = os.environ) -> Config:
    """`data` checked against the stored catalog as `apply_config` checks it, writing
    nothing (the console previews a policy with it). Raises `ConfigError`."""
    return parse_config(data, vocabulary=vocabulary(), existing=_existing(), environ=environ)


def _record_events(tally: _Tally, report: ApplyReport, *, actor: str, target: str) -> None:
    """The run's event (no workspace), then one per workspace whose rows changed."""
    run = {
        "counts": report.as_dict(),
        "changes": list(report.changes),
        "objects": tally.objects.get(None, []),
    }
    record_event(
        actor=actor,
        workspace=None,
        action=ACTION,
        target=target,
        before=None,
        after=None,
        extra=run,
    )
    slugs = [slug for slug in tally.objects if slug is not None]
    workspaces = Workspace.objects.in_bulk(slugs, field_name="slug")
    for slug in slugs:
        record_event(
            actor=actor,
            workspace=workspaces[slug],
            action=ACTION,
            target=target,
            before=None,
            after=None,
            extra={"objects": tally.objects[slug]},
        )


def _existing() -> Existing:
    virtual = {
        slug: tuple(t["model"] for t in targets if isinstance(t, dict) and "model" in t)
        for slug, targets in VirtualModel.objects.values_list("slug", "targets")
        if isinstance(targets, list)
    }
    aliases = {
        slug: tuple(names) for slug, names in CatalogModel.objects.values_list("slug", "aliases")
    }
    return Existing(
        providers=frozenset(Provider.objects.values_list("slug", flat=True)),
        models=frozenset(aliases),
        virtual_models=virtual,
        presets=_slugs_by_workspace(Preset),
        routes=_slugs_by_workspace(Route),
        aliases=aliases,
    )


def _slugs_by_workspace(model: type[models.Model]) -> dict[str, frozenset[str]]:
    slugs: dict[str, set[str]] = {}
    for workspace, slug in model.objects.values_list("workspace__slug", "slug"):
        slugs.setdefault(workspace, set()).add(slug)
    return {workspace: frozenset(found) for workspace, found in slugs.items()}


# A sealer stores a row's secret; when it re-sealed, it returns the stored ciphertext (None
# if there was none) and the new one, which the audit shows as `[secret]`.
_Sealer = Callable[[models.Model], tuple[bytes | None, bytes] | None]


def _upsert(
    tally: _Tally,
    which: _Row,
    row: models.Model | None,
    factory: Callable[[], models.Model],
    values: Mapping[str, Any],
    sealer: _Sealer | None = None,
) -> Any:
    """Create `row` (via `factory`) or update the fields of `values` that differ; save
    only when something changed, and tally the before/after of what did."""
    created = row is None
    if row is None:
        row = factory()
    before = None if created else {name: _audited(getattr(row, name)) for name in values}
    changed = [name for name, value in values.items() if created or getattr(row, name) != value]
    for name in changed:
        setattr(row, name, values[name])
    after = {name: _audited(value) for name, value in values.items()}
    resealed = sealer(row) if sealer is not None else None
    if resealed is not None:
        changed.append("api_key")
        after["api_key"] = resealed[1]
        if before is not None:
            before["api_key"] = resealed[0]
    if created or changed:
        if hasattr(row, "updated_at"):
            row.updated_at = timezone.now()  # VirtualModel's is not auto_now
        row.save()
    tally.record(which, created, [] if created else changed, diff(before, after))
    return row


def _audited(value: Any) -> Any:
    """A column's value as the audit shows it: a row it refers to (a key's preset) by slug."""
    return getattr(value, "slug", value) if isinstance(value, models.Model) else value


def _sealer(secret: Secret | None, aad: bytes, columns: tuple[str, str, str]) -> _Sealer:
    """A `sealer` for `_upsert`: re-seal only when the stored key differs from `secret`."""
    ciphertext_col, nonce_col, key_id_col = columns
    keys = settings.SWITCHYARD_ENCRYPTION_KEYS

    def store(row: models.Model) -> tuple[bytes | None, bytes] | None:
        if secret is None:
            return None
        stored = getattr(row, ciphertext_col)
        if stored:
            sealed = Sealed(bytes(stored), bytes(getattr(row, nonce_col)), getattr(row, key_id_col))
            try:
                if unseal(sealed, aad, keys) == secret.plaintext:
                    return None
            except DecryptionError:
                pass  # stored under a retired key or for another owner: replace it
        fresh = seal(secret.plaintext, aad, keys)
        setattr(row, ciphertext_col, fresh.ciphertext)
        setattr(row, nonce_col, fresh.nonce)
        setattr(row, key_id_col, fresh.key_id)
        return (bytes(stored) if stored else None), fresh.ciphertext

    return store


def _columns(spec: Any, *, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """A spec's fields as column values: tuples become JSON lists. Never for specs that
    hold a `Secret`."""
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in asdict(spec).items()
        if name not in exclude
    }


def _write(config: Config, tally: _Tally, *, actor: str, deploy: bool) -> None:
    providers = Provider.objects.in_bulk([s.slug for s in config.providers], field_name="slug")
    for spec in config.providers:
        values = {"name": spec.name, "api_style": spec.api_style, "base_url": spec.base_url}
        columns = ("credential_ciphertext", "credential_nonce", "credential_key_id")
        sealer = _sealer(spec.api_key, owner_aad(None, spec.slug), columns)
        row = providers.get(spec.slug)
        which = _Row("provider", spec.slug)
        _upsert(tally, which, row, partial(Provider, slug=spec.slug), values, sealer)

    catalog = CatalogModel.objects.in_bulk([s.slug for s in config.models], field_name="slug")
    for model in config.models:
        values = _columns(model, exclude=("slug",))
        factory = partial(CatalogModel, slug=model.slug)
        _upsert(tally, _Row("model", model.slug), catalog.get(model.slug), factory, values)

    provider_ids = dict(Provider.objects.values_list("slug", "pk"))
    model_ids = dict(CatalogModel.objects.values_list("slug", "pk"))
    endpoints = Endpoint.objects.in_bulk([s.id for s in config.endpoints])
    for endpoint in config.endpoints:
        values = _columns(endpoint, exclude=("id", "provider", "model"))
        values.update(
            provider_id=provider_ids[endpoint.provider], model_id=model_ids[endpoint.model]
        )
        factory = partial(Endpoint, id=endpoint.id)
        _upsert(tally, _Row("endpoint", endpoint.id), endpoints.get(endpoint.id), factory, values)

    slugs = [s.slug for s in config.virtual_models]
    virtual = VirtualModel.objects.in_bulk(slugs, field_name="slug")
    for virtual_model in config.virtual_models:
        values = _columns(virtual_model, exclude=("slug",))
        factory = partial(VirtualModel, slug=virtual_model.slug)
        which = _Row("virtual_model", virtual_model.slug)
        _upsert(tally, which, virtual.get(virtual_model.slug), factory, values)

    for workspace in config.workspaces:
        _write_workspace(workspace, tally, actor=actor, deploy=deploy)


def _write_workspace(spec: WorkspaceSpec, tally: _Tally, *, actor: str, deploy: bool) -> None:
    values: dict[str, Any] = {"name": spec.name}
    if spec.smart_routing is not None:
        values["smart_routing"] = spec.smart_routing
    if spec.auto_router is not None:
        values["auto_router"] = spec.auto_router
    row = Workspace.objects.filter(slug=spec.slug).first()
    factory = partial(Workspace, slug=spec.slug)
    ws = spec.slug
    workspace: Workspace = _upsert(tally, _Row("workspace", ws, ws), row, factory, values)

    if spec.policy is not None:
        row = Policy.objects.filter(workspace=workspace).first()
        factory = partial(Policy, workspace=workspace)
        _upsert(tally, _Row("policy", ws, ws), row, factory, _columns(spec.policy))

    stored = {c.provider_slug: c for c in ProviderCredential.objects.filter(workspace=workspace)}
    for cred in spec.credentials:
        values = {
            "allowed_models": list(cred.allowed_models),
            "managed_fallback": cred.managed_fallback,
        }
        aad = owner_aad(spec.slug, cred.provider)
        sealer = _sealer(cred.api_key, aad, ("ciphertext", "nonce", "key_id"))
        factory = partial(ProviderCredential, workspace=workspace, provider_slug=cred.provider)
        which = _Row("credential", f"{ws}/{cred.provider}", ws)
        _upsert(tally, which, stored.get(cred.provider), factory, values, sealer)

    presets = {p.slug: p for p in Preset.objects.filter(workspace=workspace)}
    for preset in spec.presets:
        factory = partial(Preset, workspace=workspace, slug=preset.slug)
        values = _columns(preset, exclude=("slug",))
        which = _Row("preset", f"{ws}/{preset.slug}", ws)
        presets[preset.slug] = _upsert(tally, which, presets.get(preset.slug), factory, values)

    settings = {k.name: k for k in KeySettings.objects.filter(workspace=workspace)}
    for key in spec.keys:
        values = {
            "expires_at": key.expires_at,
            "allowed_models": list(key.allowed_models),
            "preset": presets[key.preset] if key.preset else None,
            "routes": list(key.routes),
        }
        factory = partial(KeySettings, workspace=workspace, name=key.name)
        which = _Row("key", f"{ws}/{key.name}", ws)
        _upsert(tally, which, settings.get(key.name), factory, values)
        # A key entry is the key's whole truth: no `budget:` / `limits:` there, none stored.
        _write_budgets(workspace, key.name, (key.budget,) if key.budget else (), tally)
        _write_limits(workspace, key.name, key.limits, tally)

    if spec.budgets is not None:
        _write_budgets(workspace, "", spec.budgets, tally)
    if spec.limits is not None:
        _write_limits(workspace, "", spec.limits, tally)

    for route in spec.routes:
        _write_route(workspace, route, tally, actor=actor, deploy=deploy)


def _write_budgets(
    workspace: Workspace, key_name: str, specs: tuple[BudgetSpec, ...], tally: _Tally
) -> None:
    """The budgets of one scope (the workspace's own for `key_name` ""), one per period:
    those not in `specs` are removed."""
    stored = {b.period: b for b in Budget.objects.filter(workspace=workspace, key_name=key_name)}
    scope = f"{workspace.slug}/{key_name or '*'}"
    for budget in specs:
        factory = partial(Budget, workspace=workspace, key_name=key_name, period=budget.period)
        values = {"limit_micros": budget.limit_micros, "alerts": list(budget.alerts)}
        which = _Row("budget", f"{scope} {budget.period}", workspace.slug)
        _upsert(tally, which, stored.pop(budget.period, None), factory, values)
    for period, row in stored.items():
        row.delete()
        before = {"limit_micros": row.limit_micros, "alerts": row.alerts}
        tally.removed(_Row("budget", f"{scope} {period}", workspace.slug), before)


def _write_limits(
    workspace: Workspace, key_name: str, spec: LimitsSpec | None, tally: _Tally
) -> None:
    row = RateLimit.objects.filter(workspace=workspace, key_name=key_name).first()
    which = _Row("limit", f"{workspace.slug}/{key_name or '*'}", workspace.slug)
    if spec is None:
        if row is not None:
            row.delete()
            fields = ("requests_per_minute", "tokens_per_minute", "concurrent")
            tally.removed(which, {name: getattr(row, name) for name in fields})
        return
    factory = partial(RateLimit, workspace=workspace, key_name=key_name)
    _upsert(tally, which, row, factory, _columns(spec))


def _write_route(
    workspace: Workspace, spec: RouteSpec, tally: _Tally, *, actor: str, deploy: bool
) -> None:
    """A changed route is a new draft version (presets/services.py); it routes nothing
    until deployed (D-25), which `deploy` does at once."""
    which = _Row("route", f"{workspace.slug}/{spec.slug}", workspace.slug)
    existed = Route.objects.filter(workspace=workspace, slug=spec.slug).exists()
    saved = save_route(workspace, spec.content, actor=actor, message="manage.py apply")
    changed = [f"version {saved.version.number}"] if saved.created and existed else []
    if deploy and saved.route.deployed_id != saved.version.pk:
        deploy_route(saved.route, saved.version.number, actor=actor)
        changed.append(f"deployed v{saved.version.number}")
    tally.record(which, not existed, changed, {})  # audited by the route's own events
