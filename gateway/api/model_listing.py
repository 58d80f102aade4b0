"""What `GET /v1/models` lists for a key (SPEC D-7, R-BEY-10): every catalog model with an
endpoint the key may use, and every name the key may send that routes to one — the
virtual models, the workspace's tiered aliases and `auto` — so clients that check a model
id against the list before calling (or call `GET /v1/models/{id}`) accept them.

Pure: the snapshot and the workspace come in, OpenAI-shaped model objects go out."""

from __future__ import annotations

from typing import Any

from gateway.state.snapshot import KeyEntry, Snapshot, WorkspaceEntry
from routing.engine.decide import REQUEST_INDEPENDENT, first_rejection
from routing.engine.types import PolicyView, RoutingRequest
from routing.engine.virtual import MAX_VIRTUAL_DEPTH

AUTO = "auto"  # the canonical spelling of the auto aliases (R-MOD-1)
OWNED_BY_SWITCHYARD = "switchyard"  # names that exist only in this gateway's configuration


def list_models(snap: Snapshot, workspace: WorkspaceEntry, key: KeyEntry) -> list[dict[str, Any]]:
    """The model objects the key may use, sorted by id: its workspace's policy narrowed to
    its preset and allowed models (R-KEY-1), and only the names it may request."""
    usable = _usable_models(snap, key.policy or workspace.policy)
    listed = {
        slug: _model(
            slug, snap.models[slug].created if slug in snap.models else 0, slug.split("/")[0]
        )
        for slug in usable
    }
    for slug, entry in snap.virtual.items():
        if _reaches(snap, slug, usable, 0):
            listed[slug] = _model(slug, entry.created, OWNED_BY_SWITCHYARD)
    if workspace.tiers is not None:
        for name, alias in workspace.tiers.aliases.items():
            if any(_reaches(snap, target, usable, 0) for target in (alias.easy, alias.hard)):
                listed[name] = _model(name, workspace.created, OWNED_BY_SWITCHYARD)
    if usable:
        listed.setdefault(AUTO, _model(AUTO, workspace.created, OWNED_BY_SWITCHYARD))
    allowed = key.allowed
    return [listed[n] for n in sorted(listed) if allowed is None or n in allowed or n == AUTO]


def find_model(
    snap: Snapshot, workspace: WorkspaceEntry, key: KeyEntry, model_id: str
) -> dict[str, Any] | None:
    """One of `list_models`' objects by its id, or None."""
    return next((m for m in list_models(snap, workspace, key) if m["id"] == model_id), None)


def _usable_models(snap: Snapshot, policy: PolicyView) -> set[str]:
    usable = set()
    for slug, endpoints in snap.endpoints.items():
        probe = RoutingRequest(requested_model=slug, model=slug)
        if any(
            first_rejection(e, probe, policy, checks=REQUEST_INDEPENDENT) is None for e in endpoints
        ):
            usable.add(slug)
    return usable


def _reaches(snap: Snapshot, slug: str, usable: set[str], depth: int) -> bool:
    """True when `slug` is a usable model or a virtual model with a target that reaches one."""
    if slug in usable:
        return True
    entry = snap.virtual.get(slug)
    if entry is None or depth >= MAX_VIRTUAL_DEPTH:
        return False
    return any(_reaches(snap, target, usable, depth + 1) for target, _weight in entry.targets)


def _model(model_id: str, created: int, owned_by: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": owned_by}
