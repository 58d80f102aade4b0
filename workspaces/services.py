"""Writes to tenancy data. Each service runs in one transaction and audits itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.models import AdminEvent
from workspaces.keys import KEY_PREFIX, generate_key, split_key
from workspaces.models import ApiKey, Workspace


@dataclass(frozen=True, slots=True)
class CreatedKey:
    api_key: ApiKey
    plaintext: str  # shown once, never stored


def create_api_key(
    workspace: Workspace, *, name: str = "default", actor: str, expires_at: datetime | None = None
) -> CreatedKey:
    issued = generate_key(settings.SWITCHYARD_KEY_PEPPER)
    with transaction.atomic():
        key = ApiKey.objects.create(
            workspace=workspace,
            name=name,
            lookup_id=issued.lookup_id,
            secret_hmac=issued.secret_hmac,
            expires_at=expires_at,
        )
        AdminEvent.objects.create(
            actor=actor,
            workspace=workspace,
            action="api_key.create",
            target=key.prefix,
            changes={"name": name, "expires_at": expires_at.isoformat() if expires_at else None},
        )
    return CreatedKey(api_key=key, plaintext=issued.plaintext)


class UnknownKey(Exception):
    pass


def find_key(key_or_prefix: str) -> ApiKey:
    """Accept the whole key, its display prefix `sk-sy-<lookup>` or the bare lookup id."""
    parts = split_key(key_or_prefix)
    lookup_id = parts[0] if parts else key_or_prefix.removeprefix(KEY_PREFIX).split("-")[0]
    key = ApiKey.objects.select_related("workspace").filter(lookup_id=lookup_id).first()
    if key is None:
        raise UnknownKey(f"no API key with prefix {KEY_PREFIX}{lookup_id}")
    return key


def revoke_api_key(key: ApiKey, *, actor: str) -> bool:
    """Revoke; False when it already was. Gateways stop accepting it within one snapshot
    poll (SWITCHYARD_SNAPSHOT_POLL_S)."""
    with transaction.atomic():
        if key.revoked_at is not None:
            return False
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        AdminEvent.objects.create(
            actor=actor, workspace=key.workspace, action="api_key.revoke", target=key.prefix
        )
    return True
