"""Writes to presets and to the settings of API keys (SPEC R-PRE-1, R-KEY-1, D-24,
R-OBS-4), for the management API (management_api/preset_views.py) and the console. Each
function runs in one transaction and audits itself (`audit.events.record_event`): one AdminEvent per
change, with who (`actor`), what (`action`, `target`) and the before/after of every field
that changed; a write that changes nothing writes no event. Routes are written by
presets/services.py.

Every row saved here is one of the snapshot's configuration models, so its post_save /
post_delete receiver bumps the configuration version on commit: gateways pick the change
up within one poll (gateway/state/snapshot.py).

Key settings are kept by key *name* (D-24). Renaming a key carries its settings to the new
name in the same transaction (`update_key`); when the new name already has settings of
its own, the rename is refused (`SettingsNameTaken`), since one of the two would be lost.
A key without settings renamed to a name that has some takes those on, as a key created
under that name would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from audit.events import diff, record_event
from budgets import services as budget_services
from budgets.services import LimitValues
from declarative.workspaces import PRESET_KEYS
from presets.models import KeySettings, Preset, Route
from workspaces.models import ApiKey, Workspace
from workspaces.services import CreatedKey, create_api_key, update_api_key

# The columns of a preset besides its slug: the keys of a preset in `apply`'s file.
PRESET_FIELDS = tuple(key for key in PRESET_KEYS if key != "slug")
# What the management API may change of a key's settings; `expires_at` is `apply`'s.
EDITABLE_SETTINGS = ("allowed_models", "preset", "routes")
KEY_LIMIT_FIELDS = ("budget", "limits")  # a key's name's budget and rate limits
# The settings of a name without a row: what the gateway applies then.
NO_SETTINGS: dict[str, Any] = {
    "expires_at": None,
    "allowed_models": [],
    "preset": None,
    "routes": [],
}


class DuplicatePreset(ValueError):
    """The workspace already has a preset of that slug."""


class PresetInUse(ValueError):
    """A preset that key settings name cannot be deleted (the FK is PROTECT)."""

    def __init__(self, preset: Preset, names: Sequence[str]) -> None:
        self.names = tuple(names)
        listed = ", ".join(repr(name) for name in self.names)
        super().__init__(
            f"preset {preset.slug!r} is used by the settings of the key(s) {listed}; "
            "give them another preset (or none) first"
        )


@dataclass(frozen=True, slots=True)
class Problem:
    path: str  # `preset`, `routes[1]`
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SettingsInvalid(ValueError):
    """Key settings naming a preset or routes the workspace does not have."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))


class SettingsNameTaken(ValueError):
    """A rename whose new name already has key settings of its own."""


def _audit(
    workspace: Workspace,
    actor: str,
    action: str,
    target: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> None:
    record_event(
        actor=actor, workspace=workspace, action=action, target=target, before=before, after=after
    )


def _as_audited(values: Mapping[str, Any]) -> dict[str, Any]:
    """Key settings as their event shows them: the preset by its slug."""
    return {f: v.slug if isinstance(v, Preset) else v for f, v in values.items()}


# Presets ----------------------------------------------------------------------------


def _preset_values(values: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(values) - set(PRESET_FIELDS)
    if unknown:
        raise TypeError(f"not a preset field: {', '.join(sorted(unknown))}")
    return {field: values[field] for field in PRESET_FIELDS if field in values}


def create_preset(
    workspace: Workspace, slug: str, values: Mapping[str, Any], *, actor: str
) -> Preset:
    """A new preset (values validated by the caller, `declarative.workspaces
    .parse_preset`). Raises `DuplicatePreset`, and then writes nothing."""
    columns = _preset_values(values)
    taken = DuplicatePreset(f"workspace {workspace.slug!r} already has a preset {slug!r}")
    try:
        with transaction.atomic():
            if Preset.objects.filter(workspace=workspace, slug=slug).exists():
                raise taken
            preset = Preset.objects.create(workspace=workspace, slug=slug, **columns)
            after = {"slug": slug, **{f: getattr(preset, f) for f in PRESET_FIELDS}}
            _audit(workspace, actor, "preset.create", slug, None, after)
    except IntegrityError:  # a concurrent create won the slug (the database constraint)
        if Preset.objects.filter(workspace=workspace, slug=slug).exists():
            raise taken from None
        raise
    return preset


def update_preset(preset: Preset, values: Mapping[str, Any], *, actor: str) -> Preset:
    """Set the given fields of a preset; audits those that changed (none: no event)."""
    columns = _preset_values(values)
    with transaction.atomic():
        current = Preset.objects.select_for_update().get(pk=preset.pk)
        before = {f: getattr(current, f) for f in columns}
        changed = list(diff(before, columns))
        if not changed:
            return current
        for field in changed:
            setattr(current, field, columns[field])
        current.save(update_fields=changed)
        _audit(current.workspace, actor, "preset.update", current.slug, before, columns)
    return current


def delete_preset(preset: Preset, *, actor: str) -> None:
    """Delete a preset no key settings use. Raises `PresetInUse` naming the keys that use
    it, and then writes nothing."""
    with transaction.atomic():
        current = Preset.objects.select_for_update().get(pk=preset.pk)
        users = KeySettings.objects.filter(preset=current).order_by("name")
        names = list(users.values_list("name", flat=True))
        if names:
            raise PresetInUse(current, names)
        before = {"slug": current.slug, **{f: getattr(current, f) for f in PRESET_FIELDS}}
        try:
            with transaction.atomic():
                current.delete()
        except ProtectedError:  # settings naming it were written after the check
            names = list(users.values_list("name", flat=True))
            raise PresetInUse(current, names) from None
        _audit(current.workspace, actor, "preset.delete", before["slug"], before, None)


# Key settings -----------------------------------------------------------------------


def settings_of(workspace: Workspace, name: str) -> KeySettings | None:
    return KeySettings.objects.filter(workspace=workspace, name=name).first()


def _settings_values(row: KeySettings | None) -> dict[str, Any]:
    if row is None:
        return dict(NO_SETTINGS)
    return {
        "expires_at": row.expires_at,
        "allowed_models": row.allowed_models,
        "preset": row.preset,
        "routes": row.routes,
    }


def _resolved(workspace: Workspace, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The changes with the preset slug as its row; raises `SettingsInvalid` listing
    every preset or route the workspace does not have."""
    unknown = set(changes) - set(EDITABLE_SETTINGS)
    if unknown:
        raise TypeError(f"not an editable key setting: {', '.join(sorted(unknown))}")
    resolved = dict(changes)
    problems = []
    if "preset" in changes and changes["preset"] is not None:
        slug = changes["preset"]
        resolved["preset"] = Preset.objects.filter(workspace=workspace, slug=slug).first()
        if resolved["preset"] is None:
            problems.append(Problem("preset", f"unknown preset {slug!r} (not in this workspace)"))
    if "routes" in changes:
        resolved["routes"] = list(changes["routes"])
        known = set(_route_slugs(workspace, resolved["routes"]))
        for index, slug in enumerate(resolved["routes"]):
            if slug not in known:
                where = f"routes[{index}]"
                problems.append(Problem(where, f"unknown route {slug!r} (not in this workspace)"))
    if "allowed_models" in changes:
        resolved["allowed_models"] = list(changes["allowed_models"])
    if problems:
        raise SettingsInvalid(problems)
    return resolved


def _route_slugs(workspace: Workspace, slugs: Iterable[str]) -> Iterable[str]:
    return Route.objects.filter(workspace=workspace, slug__in=list(slugs)).values_list(
        "slug", flat=True
    )


def set_key_settings(
    workspace: Workspace, name: str, changes: Mapping[str, Any], *, actor: str
) -> KeySettings | None:
    """Set `preset` (a slug or None), `allowed_models` and/or `routes` of the settings of
    the key named `name`, creating the row if the name has none. Audits the fields that
    changed as `key_settings.update` (`key_settings.create` for a new row); no event, and
    no row, when nothing changed. Raises `SettingsInvalid`, and then writes nothing."""
    with transaction.atomic():
        resolved = _resolved(workspace, changes)
        row = KeySettings.objects.select_for_update().filter(workspace=workspace, name=name)
        current = row.first()
        after = _as_audited(resolved)
        shown = _as_audited(_settings_values(current))
        before = {field: value for field, value in shown.items() if field in after}
        changed = list(diff(before, after))
        if not changed:
            return current
        if current is None:
            current = KeySettings(workspace=workspace, name=name)
        for field in changed:
            setattr(current, field, resolved[field])
        action = "key_settings.create" if current.pk is None else "key_settings.update"
        current.save()
        _audit(workspace, actor, action, name, before, after)
    return current


def update_key(
    key: ApiKey,
    key_changes: Mapping[str, Any],
    settings_changes: Mapping[str, Any],
    *,
    actor: str,
) -> ApiKey:
    """Change a key (`workspaces.services.update_api_key`: name, expires_at) and its
    settings, in one transaction. A rename carries the settings to the new name
    (`key_settings.rename`) unless that name has settings of its own (`SettingsNameTaken`).
    Raises what `update_api_key` and `set_key_settings` raise; then nothing is written."""
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=key.pk)
        workspace, old_name = locked.workspace, locked.name
        new_name = key_changes.get("name", old_name)
        carried = settings_of(workspace, old_name) if new_name != old_name else None
        if carried is not None and settings_of(workspace, new_name) is not None:
            raise SettingsNameTaken(
                f"the name {new_name!r} already has key settings of its own; "
                f"the settings of {old_name!r} would have nowhere to go"
            )
        updated = update_api_key(locked, key_changes, actor=actor)
        if carried is not None and updated.name != old_name:
            carried.name = updated.name
            carried.save(update_fields=["name", "updated_at"])
            _audit(
                workspace,
                actor,
                "key_settings.rename",
                updated.name,
                {"name": old_name},
                {"name": updated.name},
            )
        if settings_changes:
            set_key_settings(workspace, updated.name, settings_changes, actor=actor)
    return updated


def create_key_with_limits(
    workspace: Workspace,
    *,
    name: str | None,
    expires_at: Any,
    limits: Mapping[str, Any],
    actor: str,
) -> CreatedKey:
    """A new key (`create_api_key`) and, in the same transaction, the budget and rate
    limits of its name (`limits`: any of KEY_LIMIT_FIELDS). Raises what `create_api_key`
    raises; then nothing is written."""
    with transaction.atomic():
        created = create_api_key(workspace, name=name, expires_at=expires_at, actor=actor)
        _set_key_limits(workspace, created.api_key.name, limits, actor=actor)
    return created


def update_key_with_settings(
    key: ApiKey,
    key_changes: Mapping[str, Any],
    settings_changes: Mapping[str, Any],
    limits: Mapping[str, Any],
    *,
    actor: str,
) -> ApiKey:
    """`update_key`, and in the same transaction the budget and rate limits of the key's
    name: a rename carries them to the new name (`budget_services.carry_to_new_name`),
    then `limits` (any of KEY_LIMIT_FIELDS) are set. Raises what `update_key` and
    `carry_to_new_name` raise (`LimitsNameTaken`: the new name has limits of its own);
    then nothing is written, the rename included. Each part writes its own audit events."""
    with transaction.atomic():
        updated = update_key(key, key_changes, settings_changes, actor=actor)
        if updated.name != key.name:
            budget_services.carry_to_new_name(key.workspace, key.name, updated.name, actor=actor)
        _set_key_limits(updated.workspace, updated.name, limits, actor=actor)
    return updated


def _set_key_limits(
    workspace: Workspace, name: str, limits: Mapping[str, Any], *, actor: str
) -> None:
    if "budget" in limits:
        budget_services.set_key_budget(workspace, name, limits["budget"], actor=actor)
    if "limits" in limits:
        values = limits["limits"] or LimitValues()  # null: none
        budget_services.set_rate_limits(workspace, name, values, actor=actor)
