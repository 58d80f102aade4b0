"""Writes to a workspace's own provider keys (BYOK, SPEC R-BYOK-1, R-MGT-1). Each service
runs in one transaction and audits itself through `audit.events.record_event`, as the
tenancy's services do (workspaces/services.py): one AdminEvent per change, with the
before/after of every field that changed.

A key is sealed exactly as `apply` seals it (AES-256-GCM, bound to workspace and
provider). The row's post_save / post_delete / m2m_changed receivers bump the
configuration version on commit, so every gateway reloads within one poll. An event's
`secret` is the ciphertext, which `record_event` shows as `[secret]`: it says the key was
set, replaced or removed.

The console's credential views and the management API call these; none of them saves a
credential itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import IntegrityError, transaction

from audit.events import diff, record_event
from workspaces.models import ApiKey, ProviderCredential, Workspace
from workspaces.secrets import owner_aad, seal


@dataclass(frozen=True, slots=True)
class CredentialRules:
    """Where a workspace's own key for a provider serves, and what may stand in for it."""

    allowed_models: tuple[str, ...] = ()  # model slugs; empty: every model of the provider
    api_keys: tuple[str, ...] = ()  # lookup ids of the workspace's keys; empty: every key
    managed_fallback: bool = False  # may a failed request fall back to the managed key


class DuplicateCredential(ValueError):
    """The workspace already has a credential for that provider."""


class CredentialInvalid(ValueError):
    """Names the catalog or the workspace does not know; `problems` as (path, message)."""

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{path}: {message}" for path, message in self.problems))


def _checked(workspace: Workspace, provider: str, rules: CredentialRules) -> list[ApiKey]:
    """The keys `rules` names; raises `CredentialInvalid` listing every unknown name.

    The catalog is the routing app's: looked up by name because this app may not import
    it (pyproject's import contracts), as `apply` checks the same names against it."""
    problems = []
    if not apps.get_model("routing", "Provider").objects.filter(slug=provider).exists():
        problems.append(("provider", f"unknown provider {provider!r} (not in the catalog)"))
    models = apps.get_model("routing", "Model").objects.filter(slug__in=rules.allowed_models)
    known = set(models.values_list("slug", flat=True))
    for index, model in enumerate(rules.allowed_models):
        if model not in known:
            problems.append((f"allowed_models[{index}]", f"unknown model {model!r}"))
    live = ApiKey.objects.filter(workspace=workspace, revoked_at__isnull=True)
    keys = {key.lookup_id: key for key in live.filter(lookup_id__in=rules.api_keys)}
    for index, key_id in enumerate(rules.api_keys):
        if key_id not in keys:
            message = f"no live API key {key_id!r} in workspace {workspace.slug!r}"
            problems.append((f"api_keys[{index}]", message))
    if problems:
        raise CredentialInvalid(problems)
    return list(keys.values())


def _checked_secret(secret: str) -> str:
    if not secret.strip():
        raise CredentialInvalid([("api_key", "cannot be blank")])
    return secret.strip()  # like `apply`: a newline from a secrets file is not the key


def _sealed_into(credential: ProviderCredential, secret: str) -> None:
    aad = owner_aad(credential.workspace.slug, credential.provider_slug)
    sealed = seal(secret, aad, settings.SWITCHYARD_ENCRYPTION_KEYS)
    credential.ciphertext, credential.nonce = sealed.ciphertext, sealed.nonce
    credential.key_id = sealed.key_id


def _sealed_of(credential: ProviderCredential) -> bytes:
    """What an event's `secret` compares: the stored ciphertext (shown as `[secret]`)."""
    return bytes(credential.ciphertext)


def _rules_of(credential: ProviderCredential) -> dict[str, Any]:
    return {
        "allowed_models": list(credential.allowed_models),
        "api_keys": sorted(key.lookup_id for key in credential.api_keys.all()),
        "managed_fallback": credential.managed_fallback,
    }


def _audited_rules(rules: CredentialRules) -> dict[str, Any]:
    return {
        "allowed_models": list(rules.allowed_models),
        "api_keys": sorted(rules.api_keys),
        "managed_fallback": rules.managed_fallback,
    }


def create_credential(
    workspace: Workspace, provider: str, *, secret: str, rules: CredentialRules, actor: str
) -> ProviderCredential:
    """The workspace's own key for `provider`, sealed. Raises `DuplicateCredential` when it
    has one already and `CredentialInvalid`; then nothing is written."""
    secret = _checked_secret(secret)
    try:
        with transaction.atomic():
            keys = _checked(workspace, provider, rules)
            if ProviderCredential.objects.filter(
                workspace=workspace, provider_slug=provider
            ).exists():
                raise _duplicate_credential(workspace, provider)
            credential = ProviderCredential(
                workspace=workspace,
                provider_slug=provider,
                allowed_models=list(rules.allowed_models),
                managed_fallback=rules.managed_fallback,
            )
            _sealed_into(credential, secret)
            credential.save()
            credential.api_keys.set(keys)
            record_event(
                actor=actor,
                workspace=workspace,
                action="credential.create",
                target=provider,
                before=None,
                after={**_audited_rules(rules), "secret": _sealed_of(credential)},
            )
    except IntegrityError:  # a concurrent create won the provider (the constraint)
        if ProviderCredential.objects.filter(workspace=workspace, provider_slug=provider).exists():
            raise _duplicate_credential(workspace, provider) from None
        raise
    return credential


def _duplicate_credential(workspace: Workspace, provider: str) -> DuplicateCredential:
    return DuplicateCredential(
        f"workspace {workspace.slug!r} already has a credential for {provider!r}"
    )


def replace_credential(
    credential: ProviderCredential, *, secret: str | None, rules: CredentialRules, actor: str
) -> ProviderCredential:
    """Replace the rules and, when `secret` is given, the key (None keeps the stored one).
    Audits what changed (no event when nothing did). Raises `CredentialInvalid`."""
    secret = None if secret is None else _checked_secret(secret)
    with transaction.atomic():
        current = ProviderCredential.objects.select_for_update().get(pk=credential.pk)
        keys = _checked(current.workspace, current.provider_slug, rules)
        before = {**_rules_of(current), "secret": _sealed_of(current)}
        after = {**_audited_rules(rules), "secret": before["secret"]}
        if secret is not None:
            _sealed_into(current, secret)  # a fresh nonce: a new ciphertext, even for the same key
            after["secret"] = _sealed_of(current)
        if not diff(before, after):
            return current
        current.allowed_models = list(rules.allowed_models)
        current.managed_fallback = rules.managed_fallback
        current.save()
        current.api_keys.set(keys)
        record_event(
            actor=actor,
            workspace=current.workspace,
            action="credential.update",
            target=current.provider_slug,
            before=before,
            after=after,
        )
    return current


def delete_credential(credential: ProviderCredential, *, actor: str) -> None:
    """Delete it: from the next snapshot on, the workspace's calls to that provider carry
    the managed key. The event keeps the rules it had."""
    with transaction.atomic():
        current = ProviderCredential.objects.select_for_update().get(pk=credential.pk)
        before = {**_rules_of(current), "secret": _sealed_of(current)}
        current.delete()
        record_event(
            actor=actor,
            workspace=credential.workspace,
            action="credential.delete",
            target=credential.provider_slug,
            before=before,
            after=None,
        )
