"""Wire shapes of the management API's workspace resources (`/api/v1/workspaces/{ws}/…`).

Serializers validate and render; they never save (writes go through
`workspaces.services` and `workspaces.credential_services`). One serializer per resource
serves both directions: its read-only fields are the response, its writable fields the
request body (drf-spectacular splits them into `ApiKey` and `ApiKeyRequest` in the
schema). Secrets appear once, in the response of the POST that made them
(`IssuedApiKeySerializer`), never afterwards; no serializer has a field for an HMAC. A
BYOK credential's key is write-only: it is never shown, not even once
(`CredentialSerializer`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from workspaces.models import NAME_MAX_CHARS, ApiKey

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
KEY_STATUSES = ("active", "expired", "revoked")
SECRET_MAX_CHARS = 4096  # a provider key; far above any real one, bounds what is sealed


class ExpiryField(serializers.DateTimeField):
    """D-24: a date (the key works to the end of that day, UTC) or an ISO datetime (UTC
    when it names no zone); a past value is accepted and the key is then expired."""

    default_error_messages = {
        "invalid": "Expected a date (2027-06-30) or an ISO datetime (2027-06-30T12:00:00Z).",
    }

    def to_internal_value(self, value: Any) -> datetime:
        if not (isinstance(value, str) and _DATE.match(value)):
            return super().to_internal_value(value)
        try:
            day = date.fromisoformat(value)
        except ValueError:
            self.fail("invalid")
            raise  # not reached: fail() raises
        return datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)


@extend_schema_field({"type": "string", "enum": list(KEY_STATUSES)}, "ApiKeyStatus")
class KeyStatusField(serializers.Field):
    """`active`, `expired` or `revoked`, at the request's `now` (serializer context)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, key: ApiKey) -> str:
        return key.status(self.context.get("now") or timezone.now())


class ManagementSerializer(serializers.Serializer):
    """Serializers here validate only (a view hands `validated_data` to a service), and
    refuse a body field they would otherwise drop: an unknown or read-only field is a
    400, not a change that silently did not happen."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            refused = {
                str(name): ["is read-only" if name in self.fields else "is not a field"]
                for name in data
                if name not in writable
            }
            if refused:
                raise serializers.ValidationError(refused)
        return super().to_internal_value(data)

    def create(self, validated_data: Any) -> Any:
        raise NotImplementedError("write through the workspaces services")

    def update(self, instance: Any, validated_data: Any) -> Any:
        raise NotImplementedError("write through the workspaces services")


class ApiKeySerializer(ManagementSerializer, serializers.ModelSerializer):
    """A workspace API key, never with its secret. `name` is unique among the workspace's
    keys that are not revoked; a key created without one is named `key-<id>`."""

    # (Its docstring is the schema's description.) Writable: `name`, `expires_at`. To add
    # a field stored on `ApiKey`: declare it, add it to `Meta.fields` and, if it can be
    # changed, to `services.EDITABLE_KEY_FIELDS`. For data stored elsewhere (key settings
    # in presets), subclass this, see `management_api.tenancy_views.ApiKeyViewSet`.

    id = serializers.CharField(
        source="lookup_id", read_only=True, help_text="the key's lookup id; used in URLs"
    )
    name = serializers.CharField(max_length=NAME_MAX_CHARS, required=False)
    prefix = serializers.CharField(
        read_only=True, help_text="`sk-sy-<id>`: recognises the key, cannot be used as one"
    )
    status = KeyStatusField()
    expires_at = ExpiryField(
        required=False,
        allow_null=True,
        help_text="a date (valid to the end of that day, UTC) or an ISO datetime; null: never",
    )

    class Meta:
        model = ApiKey
        fields: tuple[str, ...] = (
            "id",
            "name",
            "prefix",
            "status",
            "created_at",
            "expires_at",
            "revoked_at",
        )
        read_only_fields: tuple[str, ...] = ("created_at", "revoked_at")


class IssuedApiKeySerializer(ApiKeySerializer):
    """A key just created: the only response that holds its secret (`key`)."""

    key = serializers.SerializerMethodField(
        help_text="the whole key `sk-sy-<id>-<secret>`: shown in this response only"
    )

    class Meta(ApiKeySerializer.Meta):
        fields = (*ApiKeySerializer.Meta.fields, "key")

    @extend_schema_field(OpenApiTypes.STR)
    def get_key(self, key: ApiKey) -> str:
        return str(self.context["plaintext"])


class KeyIdsField(serializers.ListField):
    """API keys by lookup id (the part after `sk-sy-` in a key's prefix). Read from a
    credential's keys (a related manager), sorted."""

    child = serializers.CharField(max_length=16)

    def to_representation(self, keys: Any) -> list[str]:
        return sorted(key.lookup_id for key in keys.all())


class CredentialHealthSerializer(serializers.Serializer):
    """How a credential fares, as the answering gateway worker knows it (R-BEY-7): its
    cooldown and the failures this worker saw, and the live numbers of the attempts with
    its key over the last five minutes, every worker's and replica's (R-OBS-2)."""

    status = serializers.ChoiceField(choices=["ok", "cooling"])
    cooling_until = serializers.DateTimeField(allow_null=True)
    cooling_reason = serializers.CharField(
        allow_null=True, help_text="rate_limited | auth_or_not_found | server_errors"
    )
    last_failure = serializers.CharField(
        allow_null=True, help_text="e.g. http_401, http_429, http_503, does_not_decrypt"
    )
    last_failure_at = serializers.DateTimeField(allow_null=True)
    recent_failures = serializers.IntegerField(help_text="in the last five minutes")
    requests = serializers.IntegerField(help_text="attempts with this key, last five minutes")
    error_rate = serializers.FloatField(
        allow_null=True, help_text="0..1 of those attempts (not 429s, not geo-blocks); null: none"
    )
    latency_p50_ms = serializers.FloatField(allow_null=True)
    latency_p99_ms = serializers.FloatField(allow_null=True)
    ttft_p50_ms = serializers.FloatField(allow_null=True, help_text="streams' first token")


class CredentialSerializer(ManagementSerializer):
    """A workspace's own provider key (BYOK, SPEC R-BYOK-1), never with the key: `api_key`
    is write-only, sealed on save and shown to no one again. It serves the workspace's
    calls to `provider` for `allowed_models` (empty: all) made with `api_keys` (empty:
    every key of the workspace); `managed_fallback` says whether the managed key may be
    used when it fails (docs/byok.md)."""

    provider = serializers.SlugField(source="provider_slug", max_length=64)
    api_key = serializers.CharField(
        write_only=True, max_length=SECRET_MAX_CHARS, help_text="the provider's key: write-only"
    )
    allowed_models = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        default=list,
        help_text="model slugs it serves; [] (default): every model of the provider",
    )
    api_keys = KeyIdsField(
        required=False,
        default=list,
        help_text="ids of the workspace's API keys it serves; [] (default): every key",
    )
    api_key_names = serializers.SerializerMethodField(
        help_text="the names of `api_keys`, in the same order"
    )
    managed_fallback = serializers.BooleanField(
        required=False,
        default=False,
        help_text="may a request it fails fall back to the managed key (default false)",
    )
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
    health = serializers.SerializerMethodField(
        help_text="null when no gateway runs in the answering process"
    )

    def get_api_key_names(self, credential: Any) -> list[str]:
        keys = sorted(credential.api_keys.all(), key=lambda key: key.lookup_id)
        return [key.name for key in keys]

    @extend_schema_field(CredentialHealthSerializer(allow_null=True))
    def get_health(self, credential: Any) -> dict[str, Any] | None:
        health: Mapping[str, dict[str, Any]] = self.context.get("health", {})
        return health.get(credential.provider_slug)


class CredentialReplaceSerializer(CredentialSerializer):
    """The body of a PUT, which replaces: every field optional; without `api_key` the
    stored key is kept, and absent rules take their defaults."""

    provider = serializers.SlugField(source="provider_slug", max_length=64, required=False)
    api_key = serializers.CharField(
        write_only=True,
        max_length=SECRET_MAX_CHARS,
        required=False,
        help_text="a new key for the provider; absent: the stored one is kept",
    )
