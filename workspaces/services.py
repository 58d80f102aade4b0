"""Writes to tenancy data: API keys, management tokens, memberships and users (a
workspace's own provider keys: credential_services.py). Each service runs in one
transaction and audits itself through `audit.events.record_event`: one AdminEvent per
change, saying who (`actor`: a username, `token:<name>` or `cli:<command>`), what
(`action`, `target`) and the before/after of every field that changed (`changes`,
R-OBS-4). A secret, its HMAC or its ciphertext shows only as the marker `[secret]`.

Views, commands and the console call these; none of them saves a model itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.events import diff, record_event
from workspaces.keys import KEY_PREFIX, generate_key, generate_token, split_key
from workspaces.models import (
    NAME_MAX_CHARS,
    ApiKey,
    ManagementToken,
    Membership,
    Workspace,
)
from workspaces.permissions import Role

# The fields of an API key `update_api_key` may change; a change that adds a stored key
# setting adds its field here (and to the serializers, management_api/tenancy_serializers.py).
EDITABLE_KEY_FIELDS = ("name", "expires_at")


class InvalidName(ValueError):
    """A name that is blank or too long."""


class DuplicateName(ValueError):
    """A name another live row of the workspace already has."""


class DuplicateKeyName(DuplicateName):
    pass


class DuplicateTokenName(DuplicateName):
    pass


class UnknownKey(Exception):
    pass


class KeyRevoked(Exception):
    """A change asked of a key that is revoked: revocation is final."""


@dataclass(frozen=True, slots=True)
class CreatedKey:
    api_key: ApiKey
    plaintext: str  # shown once, never stored


@dataclass(frozen=True, slots=True)
class CreatedToken:
    token: ManagementToken
    plaintext: str  # shown once, never stored


def _checked_name(name: str) -> str:
    if not name.strip():
        raise InvalidName("a name cannot be blank")
    if len(name) > NAME_MAX_CHARS:
        raise InvalidName(f"a name has at most {NAME_MAX_CHARS} characters")
    return name


def _key_name_taken(workspace: Workspace, name: str, *, exclude_pk: int | None = None) -> bool:
    live = ApiKey.objects.filter(workspace=workspace, name=name, revoked_at__isnull=True)
    return live.exclude(pk=exclude_pk).exists()


def _duplicate_key(workspace: Workspace, name: str) -> DuplicateKeyName:
    return DuplicateKeyName(f"workspace {workspace.slug!r} already has a key named {name!r}")


def create_api_key(
    workspace: Workspace,
    *,
    name: str | None = None,
    actor: str,
    expires_at: datetime | None = None,
) -> CreatedKey:
    """A new key; without a name it is called `key-<lookup_id>`. Raises `DuplicateKeyName`
    when a live key of the workspace has that name (D-24) and `InvalidName`; then nothing
    is written."""
    issued = generate_key(settings.SWITCHYARD_KEY_PEPPER)
    name = _checked_name(name) if name is not None else f"key-{issued.lookup_id}"
    try:
        with transaction.atomic():
            if _key_name_taken(workspace, name):
                raise _duplicate_key(workspace, name)
            key = ApiKey.objects.create(
                workspace=workspace,
                name=name,
                lookup_id=issued.lookup_id,
                secret_hmac=issued.secret_hmac,
                expires_at=expires_at,
            )
            record_event(
                actor=actor,
                workspace=workspace,
                action="api_key.create",
                target=key.prefix,
                before=None,
                after={"name": name, "expires_at": expires_at},
            )
    except IntegrityError:  # a concurrent create won the name (the database constraint)
        if _key_name_taken(workspace, name):
            raise _duplicate_key(workspace, name) from None
        raise
    return CreatedKey(api_key=key, plaintext=issued.plaintext)


def update_api_key(key: ApiKey, changes: Mapping[str, Any], *, actor: str) -> ApiKey:
    """Set the given `EDITABLE_KEY_FIELDS` of a live key; audits the fields that changed
    (no event when none did). Raises `DuplicateKeyName`, `InvalidName` or `KeyRevoked`,
    and then writes nothing."""
    unknown = set(changes) - set(EDITABLE_KEY_FIELDS)
    if unknown:
        raise TypeError(f"not editable on a key: {', '.join(sorted(unknown))}")
    if "name" in changes:
        _checked_name(changes["name"])
    try:
        with transaction.atomic():
            current = ApiKey.objects.select_for_update().get(pk=key.pk)
            if current.revoked_at is not None:
                raise KeyRevoked(f"{current.prefix} is revoked")
            before = {field: getattr(current, field) for field in changes}
            changed = list(diff(before, changes))
            if not changed:
                return current
            if "name" in changed and _key_name_taken(
                current.workspace, changes["name"], exclude_pk=current.pk
            ):
                raise _duplicate_key(current.workspace, changes["name"])
            for field in changed:
                setattr(current, field, changes[field])
            current.save(update_fields=changed)  # post_save: gateways reload (snapshot)
            record_event(
                actor=actor,
                workspace=current.workspace,
                action="api_key.update",
                target=current.prefix,
                before=before,
                after=changes,
            )
    except IntegrityError:  # a concurrent change won the name
        if "name" in changes and _key_name_taken(key.workspace, changes["name"], exclude_pk=key.pk):
            raise _duplicate_key(key.workspace, changes["name"]) from None
        raise
    return current


def rotate_api_key(
    workspace: Workspace, *, name: str, actor: str, expires_at: datetime | None = None
) -> CreatedKey:
    """Revoke the workspace's live key named `name`, if there is one, and create its
    replacement under the same name, in one transaction (two events: revoke, create).
    For a command that hands out "a fresh key" each run, e.g. `bootstrap --demo`."""
    with transaction.atomic():
        for old in ApiKey.objects.filter(workspace=workspace, name=name, revoked_at=None):
            revoke_api_key(old, actor=actor)
        return create_api_key(workspace, name=name, actor=actor, expires_at=expires_at)


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
    return _revoke(key, "api_key.revoke", actor)


def _revoke(secret: ApiKey | ManagementToken, action: str, actor: str) -> bool:
    """Revoke a key or token (the row locked, audited); False when it already was."""
    with transaction.atomic():
        current = type(secret).objects.select_for_update().get(pk=secret.pk)
        if current.revoked_at is not None:
            return False
        current.revoked_at = timezone.now()
        current.save(update_fields=["revoked_at"])
        record_event(
            actor=actor,
            workspace=current.workspace,
            action=action,
            target=current.prefix,
            before={"revoked_at": None},
            after={"revoked_at": current.revoked_at},
        )
    secret.revoked_at = current.revoked_at
    return True


def _token_name_taken(workspace: Workspace, name: str) -> bool:
    return ManagementToken.objects.active().filter(workspace=workspace, name=name).exists()


def _duplicate_token(workspace: Workspace, name: str) -> DuplicateTokenName:
    return DuplicateTokenName(
        f"workspace {workspace.slug!r} already has a management token named {name!r}"
    )


def create_management_token(
    workspace: Workspace, *, role: str, name: str | None = None, actor: str
) -> CreatedToken:
    """A management-API token bound to `workspace` and `role`; without a name it is
    called `token-<lookup_id>`. Raises `DuplicateTokenName`, `InvalidName`, or
    `ValueError` for an unknown role; then nothing is written."""
    role = Role(role).value
    issued = generate_token(settings.SWITCHYARD_KEY_PEPPER)
    name = _checked_name(name) if name is not None else f"token-{issued.lookup_id}"
    try:
        with transaction.atomic():
            if _token_name_taken(workspace, name):
                raise _duplicate_token(workspace, name)
            token = ManagementToken.objects.create(
                workspace=workspace,
                name=name,
                role=role,
                lookup_id=issued.lookup_id,
                secret_hmac=issued.secret_hmac,
            )
            record_event(
                actor=actor,
                workspace=workspace,
                action="management_token.create",
                target=token.prefix,
                before=None,
                after={"name": name, "role": role},
            )
    except IntegrityError:
        if _token_name_taken(workspace, name):
            raise _duplicate_token(workspace, name) from None
        raise
    return CreatedToken(token=token, plaintext=issued.plaintext)


def revoke_management_token(token: ManagementToken, *, actor: str) -> bool:
    """Revoke; False when it already was. The next request with it is a 401."""
    return _revoke(token, "management_token.revoke", actor)


def set_membership(workspace: Workspace, user: Any, *, role: str, actor: str) -> Membership:
    """Make `user` a member of `workspace` with `role`, or change the role they have.
    Audited only when something changed."""
    role = Role(role).value
    with transaction.atomic():
        locked = Membership.objects.select_for_update().filter(workspace=workspace, user=user)
        membership: Membership | None = locked.first()
        before = {"role": membership.role} if membership else None
        if membership is None:
            membership = Membership.objects.create(workspace=workspace, user=user, role=role)
        elif membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        else:
            return membership
        record_event(
            actor=actor,
            workspace=workspace,
            action="membership.create" if before is None else "membership.update",
            target=f"user:{user.get_username()}",
            before=before,
            after={"role": role},
        )
    return membership


def create_console_user(
    workspace: Workspace, username: str, *, password: str, role: str, actor: str
) -> Membership:
    """A new console user with `role` in `workspace` (D-30); two events: the user, then
    the membership. The password is hashed by Django and never audited."""
    Role(role)  # an unknown role fails before anything is written
    with transaction.atomic():
        user = get_user_model().objects.create_user(username=username, password=password)
        record_event(
            actor=actor,
            workspace=workspace,
            action="user.create",
            target=f"user:{username}",
            before=None,
            after={"username": username},
        )
        return set_membership(workspace, user, role=role, actor=actor)


def create_superuser(username: str, *, email: str, password: str, actor: str) -> Any:
    """An operator of the Django admin (`bootstrap --demo`'s `admin`), who sees in the
    console and the management API only the workspaces they are a member of; one
    `user.create` event of no workspace. The password is hashed and never audited."""
    with transaction.atomic():
        user = get_user_model().objects.create_superuser(username, email, password)
        record_event(
            actor=actor,
            workspace=None,
            action="user.create",
            target=f"user:{username}",
            before=None,
            after={"username": username, "is_superuser": True},
        )
    return user
