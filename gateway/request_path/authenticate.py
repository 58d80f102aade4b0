"""Step 1 of the request path: the workspace key against the snapshot (no SQL), giving
the request's `Caller`. The snapshot comes from `snapshot_knowing_key`, which knows a key
made since the worker's last poll (gateway/state/key_lookups.py)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from gateway.errors import ApiError
from gateway.request_path.caller import Caller
from gateway.state import request_state
from gateway.state.snapshot import KeyEntry, Snapshot, WorkspaceEntry
from workspaces.keys import secret_matches, split_key


def _invalid_key() -> ApiError:
    # One body for unknown, malformed, expired and revoked keys (SPEC D-3).
    return ApiError(401, "Invalid API key.", code="invalid_api_key")


def presented_key(request: HttpRequest) -> str:
    """The workspace key the client sent (no check): `Authorization: Bearer`, else
    `x-api-key` (Anthropic's SDK and Claude Code send either, SPEC R-API-9)."""
    authorization: str = request.headers.get("Authorization", "")
    scheme, _, raw = authorization.partition(" ")
    if scheme.lower() == "bearer" and raw.strip():
        return raw.strip()
    api_key: str = request.headers.get("x-api-key", "")
    return api_key.strip()


async def snapshot_knowing_key(request: HttpRequest) -> Snapshot:
    """The snapshot to authenticate `request` against: the worker's own, reloaded first
    when it lacks a well-formed key the database has (SPEC R-KEY-1)."""
    parts = split_key(presented_key(request))
    return await request_state.snapshot_knowing(parts[0] if parts else None)


def authenticate_key(
    request: HttpRequest, snap: Snapshot, now: float
) -> tuple[KeyEntry, WorkspaceEntry]:
    """The key and its workspace, or the 401 (the model listing uses this alone)."""
    raw = presented_key(request)
    if not raw:
        raise ApiError(
            401, "Missing API key: send `Authorization: Bearer <key>`.", code="invalid_api_key"
        )
    parts = split_key(raw)
    if parts is None:
        raise _invalid_key()
    lookup_id, secret = parts
    key = snap.keys.get(lookup_id)
    if key is None or not secret_matches(secret, key.secret_hmac, settings.SWITCHYARD_KEY_PEPPER):
        raise _invalid_key()
    if key.expires_at is not None and key.expires_at <= now:
        raise _invalid_key()
    workspace = snap.workspaces.get(key.workspace_id)
    if workspace is None:
        raise _invalid_key()
    return key, workspace


def authenticate(request: HttpRequest, snap: Snapshot, now: float) -> Caller:
    key, workspace = authenticate_key(request, snap, now)
    return Caller(
        request_id=request.request_id,  # (set by the request-id middleware)
        snapshot=snap,
        key=key,
        workspace=workspace,
        started_at=now,
        key_secret=presented_key(request),
    )
