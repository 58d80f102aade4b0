"""Tenancy: workspaces, their members, API keys, BYOK credentials and the policy.

Models hold data only; writes that touch several rows live in `workspaces/services.py`
and `workspaces/credential_services.py`.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from workspaces.keys import KEY_PREFIX, TOKEN_PREFIX
from workspaces.retention import DEFAULT_RETENTION

RESIDENCY_CLASSES = ("eu-owned", "eu-hosted", "any")  # narrowest first (SPEC R-DEC-4)
ROUTING_MODES = ("balanced", "price", "latency", "throughput")
NAME_MAX_CHARS = 100  # of an API key or a management token


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    # Filled by the smart-tier and auto-router issues (CONFIG.md shapes), stored verbatim.
    smart_routing = models.JSONField(default=dict, blank=True)
    auto_router = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"
        VIEWER = "viewer"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="members")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "workspace"], name="one_membership_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self, now: timezone.datetime | None = None) -> ApiKeyQuerySet:
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).exclude(expires_at__lte=now)


class ApiKey(models.Model):
    """A workspace key `sk-sy-<lookup_id>-<secret>`; only an HMAC of the secret is kept.

    Its name is unique among the workspace's keys that are not revoked (D-24): settings
    (`keys:` in `apply`) refer to a key by name. `services.create_api_key` names an unnamed
    key `key-<lookup_id>`; a revoked key's name may be reused by its replacement.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=NAME_MAX_CHARS)
    lookup_id = models.CharField(max_length=16, unique=True)
    secret_hmac = models.CharField(max_length=64)  # hex HMAC-SHA256(pepper, secret)
    pepper_version = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="api_key_name_per_workspace",
            )
        ]

    @property
    def prefix(self) -> str:
        """What the console shows: enough to recognise a key, useless to use it."""
        return f"{KEY_PREFIX}{self.lookup_id}"

    def status(self, now: datetime) -> str:
        """`revoked`, `expired` or `active` at `now`."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"


class ManagementTokenQuerySet(models.QuerySet["ManagementToken"]):
    def active(self) -> ManagementTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ManagementToken(models.Model):
    """A bearer token for the management API (`/api/v1/`, SPEC R-MGT-1), bound to one
    workspace and one role: `sy-mt-<lookup_id>-<secret>`, stored like an API key (lookup
    id + HMAC of the secret). Its name is unique among the workspace's live tokens, so
    the audit log's `token:<name>` names one token."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="management_tokens"
    )
    name = models.CharField(max_length=NAME_MAX_CHARS)
    role = models.CharField(max_length=10, choices=Membership.Role.choices)
    lookup_id = models.CharField(max_length=16, unique=True)
    secret_hmac = models.CharField(max_length=64)  # hex HMAC-SHA256(pepper, secret)
    pepper_version = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)  # to the minute, see auth

    objects = ManagementTokenQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="management_token_name_per_workspace",
            )
        ]

    @property
    def prefix(self) -> str:
        return f"{TOKEN_PREFIX}{self.lookup_id}"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name}, {self.role})"


class ProviderCredential(models.Model):
    """A workspace's own provider key (BYOK), AES-256-GCM encrypted and write-only.

    The associated data binds the ciphertext to this workspace and provider, so a row
    copied to another workspace or provider fails to decrypt (SPEC R-BYOK-1).
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="credentials")
    provider_slug = models.SlugField(max_length=64)
    ciphertext = models.BinaryField()
    nonce = models.BinaryField()
    key_id = models.CharField(max_length=32)  # which SWITCHYARD_ENCRYPTION_KEYS entry
    allowed_models = models.JSONField(default=list, blank=True)  # empty = all the provider's
    api_keys = models.ManyToManyField(ApiKey, blank=True)  # none = every key of the workspace
    managed_fallback = models.BooleanField(default=False)  # byok_managed_fallback
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "provider_slug"], name="one_credential_per_provider"
            )
        ]

    def __str__(self) -> str:
        return f"{self.workspace} → {self.provider_slug} (key {self.key_id})"


class Policy(models.Model):
    """The workspace's routing policy (SPEC R-POL-1); requests can only narrow it."""

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="policy")
    allowed_residency = models.JSONField(default=list, blank=True)  # empty = any
    allowed_regions = models.JSONField(default=list, blank=True)  # empty = any
    provider_allow = models.JSONField(default=list, blank=True)
    provider_deny = models.JSONField(default=list, blank=True)
    model_allow = models.JSONField(default=list, blank=True)
    model_deny = models.JSONField(default=list, blank=True)
    partners = models.BooleanField(default=False)
    max_price_prompt = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    max_price_completion = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    retention = models.CharField(max_length=16, default=DEFAULT_RETENTION)
    data_classes = models.JSONField(default=list, blank=True)
    daily_budget_micros = models.BigIntegerField(null=True, blank=True)  # USD × 1e6
    routing_mode = models.CharField(max_length=12, default="balanced")
    max_attempts = models.PositiveSmallIntegerField(default=3)
    timeouts = models.JSONField(default=dict, blank=True)  # connect_ms, ttft_ms, idle_ms, total_ms
    cooldown = models.JSONField(default=dict, blank=True)  # base_s, max_s
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return f"policy of {self.workspace}"
