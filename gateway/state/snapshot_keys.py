"""Reading API keys with their settings into the snapshot's `KeyEntry` values (R-KEY-1).

A key's settings are the `KeySettings` row of its name in its workspace (D-24), with the
preset it names. Its scope — the names it may request, and its workspace's policy narrowed
to that scope and to the preset — is computed here, once per snapshot, by the engine's
routing/engine/key_scope.py, so a request pays for none of it. Synchronous; called by
`load_snapshot` inside its transaction. `key_exists` is the one read of a key outside a
snapshot: whether a key the snapshot lacks has been made since (gateway/state/key_lookups.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from gateway.state.snapshot_types import KeyEntry, VirtualEntry, WorkspaceEntry
from presets.models import KeySettings, Preset
from routing.engine.key_scope import PresetView, allowed_names, key_policy
from workspaces.models import ApiKey


def load_keys(
    workspaces: Mapping[int, WorkspaceEntry],
    names: Mapping[str, str],
    virtual: Mapping[str, VirtualEntry],
) -> dict[str, KeyEntry]:
    """Unrevoked API keys by lookup id. Expired ones stay in: a snapshot outlives the
    moment it was read, so expiry is checked per request against `expires_at`."""
    settings = {
        (row.workspace_id, row.name): row for row in KeySettings.objects.select_related("preset")
    }
    expansions: dict[int, dict[str, tuple[str, ...]]] = {}  # per workspace, when needed
    entries = {}
    for key in ApiKey.objects.filter(revoked_at__isnull=True):
        workspace = workspaces.get(key.workspace_id)
        row = settings.get((key.workspace_id, key.name))
        expiry = [at.timestamp() for at in (key.expires_at, row and row.expires_at) if at]
        entry = KeyEntry(
            pk=key.pk,
            workspace_id=key.workspace_id,
            secret_hmac=key.secret_hmac,
            expires_at=min(expiry) if expiry else None,
            name=key.name,
        )
        if row is not None and workspace is not None:
            if workspace.id not in expansions:
                expansions[workspace.id] = _expansions(workspace, names, virtual)
            entry = _with_settings(entry, row, workspace, expansions[workspace.id])
        entries[key.lookup_id] = entry
    return entries


def key_exists(lookup_id: str) -> bool:
    """Whether an unrevoked key has this lookup id (one indexed read)."""
    return ApiKey.objects.filter(lookup_id=lookup_id, revoked_at__isnull=True).exists()


def _with_settings(
    entry: KeyEntry,
    row: KeySettings,
    workspace: WorkspaceEntry,
    expands_to: Mapping[str, tuple[str, ...]],
) -> KeyEntry:
    preset = preset_view(row.preset) if row.preset else None
    patterns = (tuple(row.allowed_models), preset.allowed_models if preset else ())
    allowed = allowed_names(patterns, expands_to, expands_to)
    policy = key_policy(workspace.policy, allowed, preset)
    return KeyEntry(
        pk=entry.pk,
        workspace_id=entry.workspace_id,
        secret_hmac=entry.secret_hmac,
        expires_at=entry.expires_at,
        name=entry.name,
        preset=preset,
        allowed=allowed,
        policy=None if policy is workspace.policy else policy,
        routes=tuple(row.routes),
    )


def preset_view(preset: Preset) -> PresetView:
    return PresetView(
        slug=preset.slug,
        allowed_models=tuple(preset.allowed_models),
        provider_allow=frozenset(preset.provider_allow),
        provider_ignore=frozenset(preset.provider_ignore),
        default_prompt=preset.default_prompt,
        default_params=dict(preset.default_params),
    )


def _expansions(
    workspace: WorkspaceEntry, names: Mapping[str, str], virtual: Mapping[str, VirtualEntry]
) -> dict[str, tuple[str, ...]]:
    """Every name a key of `workspace` may request, with what it stands for: a spelling of
    a model its slug, a virtual model its targets, a tiered alias its easy and hard
    targets. A pattern that matches a spelling so allows the model it spells."""
    expands: dict[str, tuple[str, ...]] = {spelling: (slug,) for spelling, slug in names.items()}
    for slug, entry in virtual.items():
        expands[slug] = tuple(target for target, _weight in entry.targets)
    if workspace.tiers is not None:
        for alias, tiers in workspace.tiers.aliases.items():
            expands[alias] = (tiers.easy, tiers.hard)
    return expands
