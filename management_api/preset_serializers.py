"""Wire shapes of the management API's presets, routes and key settings
(`/api/v1/workspaces/{ws}/…`, SPEC R-MGT-1, R-PRE-1, R-ROUTE-2, R-KEY-1).

Presets and route bodies are validated by the rules `manage.py apply` uses
(`declarative.workspaces.parse_preset`, `routing.engine.routes.parse_route`), not by
these serializers: for those, a serializer renders the response and describes the body
in the OpenAPI schema. The key serializers extend tenancy_serializers.py's with the key's
settings, stored in presets, and with the budget and rate limits of its name
(budget_serializers.py).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from budgets.models import Budget, RateLimit
from management_api.budget_serializers import (
    BudgetRuleSerializer,
    RateLimitsSerializer,
    key_budgets_by_name,
    key_limits_by_name,
)
from management_api.tenancy_serializers import (
    ApiKeySerializer,
    IssuedApiKeySerializer,
    ManagementSerializer,
)
from presets.models import KeySettings, Preset, Route, RouteVersion
from presets.services import MAX_MESSAGE_CHARS
from workspaces.models import ApiKey

SLUG_MAX_CHARS = 64  # Preset.slug, Route.slug


# Presets ----------------------------------------------------------------------------


class PresetSerializer(serializers.ModelSerializer):
    """A preset (R-PRE-1): what a key that names it may use, and the defaults its
    requests get where they are silent."""

    slug = serializers.SlugField(max_length=SLUG_MAX_CHARS)
    allowed_models = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="model patterns (`meta/*`); empty: any model the policy allows",
    )
    provider_allow = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="only these providers"
    )
    provider_ignore = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="never these providers"
    )
    default_prompt = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="the system message of a request that has none",
    )
    default_params = serializers.DictField(
        child=serializers.JSONField(),
        required=False,
        help_text='parameters a request does not set, e.g. `{"temperature": 0.2}`',
    )

    class Meta:
        model = Preset
        fields: tuple[str, ...] = (
            "slug",
            "allowed_models",
            "provider_allow",
            "provider_ignore",
            "default_prompt",
            "default_params",
        )


class PresetReplaceSerializer(PresetSerializer):
    """A preset's whole new content (PUT); its slug may be left out, and if given is the
    URL's: a preset's slug does not change."""

    slug = serializers.SlugField(max_length=SLUG_MAX_CHARS, required=False)

    class Meta(PresetSerializer.Meta):
        ref_name = "PresetReplace"


# Routes -----------------------------------------------------------------------------


class RouteSerializer(serializers.ModelSerializer):
    """A dynamic route (R-ROUTE-1): its versions are immutable; the deployed one routes."""

    deployed_version = serializers.IntegerField(
        source="deployed.number",
        read_only=True,
        allow_null=True,
        help_text="the version in effect; null: the route routes nothing yet",
    )
    newest_version = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = Route
        fields: tuple[str, ...] = (
            "slug",
            "deployed_version",
            "newest_version",
            "created_at",
            "updated_at",
        )
        read_only_fields: tuple[str, ...] = fields


class RouteDetailSerializer(RouteSerializer):
    """A route with the content of its deployed version (CONFIG.md shape)."""

    content = serializers.JSONField(
        source="deployed.content",
        read_only=True,
        allow_null=True,
        help_text="the deployed version's route as written; null when none is deployed",
    )

    class Meta(RouteSerializer.Meta):
        fields = (*RouteSerializer.Meta.fields, "content")
        read_only_fields = fields


class RouteVersionSerializer(serializers.ModelSerializer):
    """One immutable version of a route (D-25)."""

    deployed = serializers.SerializerMethodField(help_text="whether it is in effect")

    class Meta:
        model = RouteVersion
        fields: tuple[str, ...] = (
            "number",
            "author",
            "message",
            "created_at",
            "content_hash",
            "deployed",
        )
        read_only_fields: tuple[str, ...] = fields

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_deployed(self, version: RouteVersion) -> bool:
        route = self.context.get("route") or version.route  # the view's: no query per row
        return bool(route.deployed_id == version.pk)


class RouteVersionDetailSerializer(RouteVersionSerializer):
    """A version with its content: the route as it was saved (CONFIG.md shape)."""

    content = serializers.JSONField(read_only=True)

    class Meta(RouteVersionSerializer.Meta):
        fields = (*RouteVersionSerializer.Meta.fields, "content")
        read_only_fields = fields


class RouteBodySerializer(serializers.Serializer):
    """A route as `apply` reads it (CONFIG.md, docs/routes.md), plus an optional
    `message` for the version. `slug` may be left out (the URL's); given, it must be the
    URL's. Validated whole by the engine, every problem with its path."""

    slug = serializers.SlugField(required=False, max_length=SLUG_MAX_CHARS)
    description = serializers.CharField(required=False, allow_blank=True)
    models = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text='the requested model names it handles (patterns; default ["*"])',
    )
    start = serializers.CharField(help_text="the id of the first node")
    nodes = serializers.DictField(
        child=serializers.DictField(child=serializers.JSONField()),
        help_text="node id → node (`type`: condition, split, rate_limit, budget, model, reject)",
    )
    rollout_guard = serializers.DictField(child=serializers.JSONField(), required=False)
    message = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_MESSAGE_CHARS,
        help_text="why: kept with the version (not part of the route)",
    )

    class Meta:
        ref_name = "RouteBody"


class VersionChoiceSerializer(ManagementSerializer):
    """`{"version": N}`; left out or null, the default of the operation."""

    version = serializers.IntegerField(min_value=1, required=False, allow_null=True)


class RouteDeploymentSerializer(serializers.Serializer):
    """What a deploy or rollback put in effect (equal versions: nothing changed)."""

    slug = serializers.CharField()
    deployed_version = serializers.IntegerField(help_text="the version now in effect")
    previous_version = serializers.IntegerField(
        allow_null=True, help_text="the version in effect before; null: none was"
    )


class RouteDiffSerializer(serializers.Serializer):
    """The readable diff between two versions, node by node (`~` changed, `+` added,
    `-` removed), as `manage.py route diff` prints it."""

    from_version = serializers.IntegerField()
    to_version = serializers.IntegerField()
    lines = serializers.ListField(child=serializers.CharField())


# Keys with their settings -----------------------------------------------------------


class KeyWithSettings:
    """An API key seen with the settings of its name (D-24), its budget and its rate
    limits: what the key serializers render. Everything else is the key's."""

    def __init__(
        self,
        key: ApiKey,
        settings: KeySettings | None,
        budget: Budget | None = None,
        limits: RateLimit | None = None,
    ) -> None:
        self.key = key
        self.settings = settings
        self.budget = budget
        self.limits = limits

    def __getattr__(self, name: str) -> Any:
        return getattr(self.key, name)

    @property
    def allowed_models(self) -> list[str]:
        return list(self.settings.allowed_models) if self.settings else []

    @property
    def preset(self) -> str | None:
        preset = self.settings.preset if self.settings else None
        return preset.slug if preset else None

    @property
    def routes(self) -> list[str]:
        return list(self.settings.routes) if self.settings else []

    @property
    def settings_expires_at(self) -> Any:
        return self.settings.expires_at if self.settings else None

    def status(self, now: Any) -> str:
        """The key's status, expired also once its settings' expiry passed: the gateway
        refuses a key at the earlier of the two."""
        status = str(self.key.status(now))
        expiry = self.settings_expires_at
        if status == "active" and expiry is not None and expiry <= now:
            return "expired"
        return status


class KeyLimitsFieldsMixin(serializers.Serializer):
    """The budget and rate limits of the key's name (R-KEY-1, R-LIM-1/2, D-24), as fields
    of the key, on create and PATCH as well."""

    budget = BudgetRuleSerializer(
        required=False,
        allow_null=True,
        help_text="the key name's budget, one per key as in `apply`'s `keys:`: setting it "
        "replaces every budget of the name (`budgets` may hold one per period, of which the "
        "first by period shows here); null: none",
    )
    limits = RateLimitsSerializer(
        required=False, allow_null=True, help_text="the key name's rate limits; null: none"
    )


class KeySettingsFieldsMixin(KeyLimitsFieldsMixin):
    """The settings of the key's name (R-KEY-1, D-24), with its budget and limits, as
    fields of the key. The view puts the workspace's settings, budgets and limits by name
    in the context (`key_settings`, `key_budgets`, `key_limits`)."""

    allowed_models = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="the key's own model patterns (`meta/*`); empty: any its preset allows",
    )
    preset = serializers.SlugField(
        max_length=SLUG_MAX_CHARS,
        required=False,
        allow_null=True,
        help_text="a preset of the workspace (its slug); null: none",
    )
    routes = serializers.ListField(
        child=serializers.SlugField(max_length=SLUG_MAX_CHARS),
        required=False,
        help_text="route slugs of the workspace, tried in this order (D-23)",
    )
    settings_expires_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="the expiry `apply`'s `keys:` entry gives this name; the key is refused "
        "from the earlier of this and `expires_at`",
    )

    def to_representation(self, instance: Any) -> Any:
        if isinstance(instance, ApiKey):
            workspace_id, name = instance.workspace_id, instance.name
            found = self.context.get("key_settings")
            if found is None:
                settings = KeySettings.objects.filter(workspace_id=workspace_id, name=name)
                found = {name: settings.first()}
            budgets = self.context.get("key_budgets")
            budgets = key_budgets_by_name(workspace_id) if budgets is None else budgets
            limits = self.context.get("key_limits")
            limits = key_limits_by_name(workspace_id) if limits is None else limits
            instance = KeyWithSettings(
                instance, found.get(name), budgets.get(name), limits.get(name)
            )
        return super().to_representation(instance)


SETTINGS_FIELDS = ("allowed_models", "preset", "routes", "settings_expires_at", "budget", "limits")


class ApiKeyWithSettingsSerializer(KeySettingsFieldsMixin, ApiKeySerializer):
    """A workspace API key with the settings of its name, never with its secret. `name`
    is unique among the workspace's keys that are not revoked; renaming a key carries
    its settings to the new name."""

    class Meta(ApiKeySerializer.Meta):
        ref_name = "ApiKey"
        fields = (*ApiKeySerializer.Meta.fields, *SETTINGS_FIELDS)


class IssuedApiKeyWithSettingsSerializer(KeySettingsFieldsMixin, IssuedApiKeySerializer):
    """A key just created, with the settings its name already had (D-24): the only
    response that holds its secret (`key`)."""

    class Meta(IssuedApiKeySerializer.Meta):
        ref_name = "IssuedApiKey"
        fields = (*ApiKeySerializer.Meta.fields, *SETTINGS_FIELDS, "key")


class ApiKeyCreateSerializer(KeyLimitsFieldsMixin, ApiKeySerializer):
    """The body of a create: the key's name and expiry, and the budget and rate limits of
    its name (the other settings are PATCHed, or written beforehand by `apply`)."""

    class Meta(ApiKeySerializer.Meta):
        ref_name = "ApiKeyCreate"
        fields = (*ApiKeySerializer.Meta.fields, "budget", "limits")


def key_settings_by_name(workspace_id: int) -> dict[str, KeySettings]:
    rows = KeySettings.objects.filter(workspace_id=workspace_id).select_related("preset")
    return {row.name: row for row in rows}


class ReplayRequestSerializer(ManagementSerializer):
    """What to replay (R-BEY-3, D-25): a version of the route, over the traffic of the last
    `since` (`30m`, `24h`, `7d`)."""

    version = serializers.IntegerField(min_value=1)
    since = serializers.CharField(default="24h", max_length=16)


class ReplayReportSerializer(serializers.Serializer):
    """D-25's report: how many requests would end at another node, model, endpoint; how
    many would be refused; the cost difference; a sample of changed trace ids."""

    route = serializers.CharField()
    version = serializers.IntegerField()
    deployed = serializers.IntegerField(allow_null=True)
    since_s = serializers.FloatField()
    total = serializers.IntegerField()
    changed = serializers.DictField(child=serializers.IntegerField())
    refused = serializers.IntegerField()
    newly_refused = serializers.IntegerField(
        help_text="Of `refused`, those that were answered when they were served."
    )
    cost_delta_usd = serializers.FloatField()
    sample = serializers.ListField(child=serializers.CharField())
