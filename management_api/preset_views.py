"""The management API's presets and key settings (SPEC R-MGT-1, R-PRE-1, R-KEY-1, D-24),
under `/api/v1/workspaces/{ws}/`:

    GET    presets                       list (read)
    POST   presets                       create (edit) → 201
    GET    presets/{slug}                one preset (read)
    PUT    presets/{slug}                replace it (edit)
    PATCH  presets/{slug}                change some of its fields (edit)
    DELETE presets/{slug}                delete it (edit) → 204; refused (400) while in use
    keys, keys/{id}                      management_api.tenancy_views' keys, with the settings, the
                                         budget and the rate limits of the key's name
                                         (GET), PATCH of them (edit); budget and limits
                                         on create too

Thin: validate by the rules `apply` uses (`declarative.workspaces.parse_preset`), write
through `presets.preset_services` (presets, keys with their settings), render. Routes:
route_views.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from budgets import services as budget_services
from declarative.fields import Issues
from declarative.types import PresetSpec
from declarative.workspaces import parse_preset
from management_api.base import WorkspaceScopedViewSet, invalid
from management_api.budget_serializers import key_budgets_by_name, key_limits_by_name
from management_api.preset_serializers import (
    ApiKeyCreateSerializer,
    ApiKeyWithSettingsSerializer,
    IssuedApiKeyWithSettingsSerializer,
    PresetReplaceSerializer,
    PresetSerializer,
    key_settings_by_name,
)
from management_api.schema import error_response
from management_api.tenancy_views import REFUSALS, ApiKeyViewSet, refusal
from presets import preset_services
from presets.models import Preset
from workspaces.models import ApiKey
from workspaces.services import CreatedKey

SLUG_PATTERN = "[-a-zA-Z0-9_]+"  # declarative.fields.SLUG, Django's SlugField


# Presets ----------------------------------------------------------------------------


class _Problems(Issues):
    """`apply`'s list of problems, also remembering the first path (the envelope's
    `param`)."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.paths.append(path)
        super().add(path, message)


def _preset_spec(raw: object) -> PresetSpec:
    """The preset of a body, by `apply`'s rules; one 400 listing every problem."""
    problems = _Problems()
    spec = parse_preset(raw, "", problems)
    if problems.messages:
        raise invalid("; ".join(problems.messages), param=problems.paths[0] or None)
    return spec


def _columns(spec: PresetSpec) -> dict[str, Any]:
    """The preset's values as columns: tuples become JSON lists, mappings dicts."""
    values = {field: getattr(spec, field) for field in preset_services.PRESET_FIELDS}
    return {
        field: list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, Mapping) else v
        for field, v in values.items()
    }


def _stored(preset: Preset) -> dict[str, Any]:
    return {"slug": preset.slug, **{f: getattr(preset, f) for f in preset_services.PRESET_FIELDS}}


@extend_schema_view(
    list=extend_schema(summary="List the workspace's presets, by slug"),
    retrieve=extend_schema(summary="One preset"),
    create=extend_schema(
        summary="Create a preset",
        request=PresetSerializer,
        responses={201: PresetSerializer},
    ),
    update=extend_schema(
        summary="Replace a preset: absent fields take their defaults",
        request=PresetReplaceSerializer,
        responses={200: PresetSerializer},
    ),
    partial_update=extend_schema(
        summary="Change some fields of a preset",
        request=PresetSerializer,
        responses={200: PresetSerializer},
    ),
    destroy=extend_schema(
        summary="Delete a preset; refused while key settings name it",
        responses={
            204: OpenApiResponse(description="Deleted"),
            400: error_response(
                "Key settings use the preset (code `preset_in_use`); nothing changed."
            ),
        },
    ),
)
class PresetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, WorkspaceScopedViewSet):
    """The workspace's presets (R-PRE-1): allowed model patterns, provider allow and
    ignore lists, a default prompt and default parameters, validated by the rules of
    `manage.py apply`. A key uses a preset through its settings (`keys/{id}`)."""

    queryset = Preset.objects.order_by("slug")
    serializer_class = PresetSerializer
    lookup_field = "slug"
    lookup_value_regex = SLUG_PATTERN
    not_found_message = "No preset {slug!r} in workspace {ws!r}."
    not_found_code = "preset_not_found"

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        spec = _preset_spec(request.data)
        try:
            preset = preset_services.create_preset(
                self.workspace, spec.slug, _columns(spec), actor=self.actor
            )
        except preset_services.DuplicatePreset as exc:
            raise invalid(f"slug: {exc}", param="slug", code="duplicate_slug") from None
        return Response(self.get_serializer(preset).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        preset: Preset = self.get_object()
        body = request.data
        if kwargs.get("partial"):  # PATCH: the stored preset with the body's fields
            body = {**_stored(preset), **body} if isinstance(body, Mapping) else body
        elif isinstance(body, Mapping) and "slug" not in body:
            body = {**body, "slug": preset.slug}
        spec = _preset_spec(body)
        if spec.slug != preset.slug:
            raise invalid(
                f"slug: {spec.slug!r} is not the preset of the URL ({preset.slug!r}); "
                "a preset's slug does not change",
                param="slug",
                code="slug_mismatch",
            )
        preset = preset_services.update_preset(preset, _columns(spec), actor=self.actor)
        return Response(self.get_serializer(preset).data)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, partial=True, **kwargs)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            preset_services.delete_preset(self.get_object(), actor=self.actor)
        except preset_services.PresetInUse as exc:
            raise invalid(str(exc), code="preset_in_use") from None
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(summary="List the workspace's API keys, newest first, with settings"),
    retrieve=extend_schema(summary="One API key with the settings of its name"),
    create=extend_schema(
        summary="Create an API key; the response holds its secret, this once",
        request=ApiKeyCreateSerializer,
        responses={201: IssuedApiKeyWithSettingsSerializer},
    ),
    partial_update=extend_schema(
        summary="Rename a key, change its expiry, preset, allowed models, routes, budget "
        "or rate limits"
    ),
)
class ApiKeyWithSettingsViewSet(ApiKeyViewSet):
    """The workspace's API keys (`/v1` credentials), each shown with the settings of its
    name (R-KEY-1, D-24): allowed model patterns, a preset, the routes tried in order, the
    expiry `apply` gave the name, its budget and its rate limits. A key's secret is shown
    once, in the response that created it; revoking is final and reaches every gateway
    within 2 s. A rename carries the settings, budgets and limits to the new name; it is
    refused when that name has some of its own."""

    # Registered as `keys` (management_api/urls.py) in place of tenancy_views.ApiKeyViewSet.
    # A key is created with name, expiry, budget and limits; its other settings are
    # PATCHed (or written beforehand for its name, by `apply`).

    serializer_class = ApiKeyWithSettingsSerializer
    issued_serializer_class = IssuedApiKeyWithSettingsSerializer

    def get_serializer_class(self) -> type[BaseSerializer]:
        if self.action == "create":
            return ApiKeyCreateSerializer  # the body of a create
        return self.serializer_class

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if hasattr(self, "workspace"):  # not while drf-spectacular draws the schema
            context["key_settings"] = key_settings_by_name(self.workspace.pk)
            context["key_budgets"] = key_budgets_by_name(self.workspace.pk)
            context["key_limits"] = key_limits_by_name(self.workspace.pk)
        return context

    def perform_create(self, body: BaseSerializer) -> CreatedKey:
        data = body.validated_data
        try:
            return preset_services.create_key_with_limits(
                self.workspace,
                name=data.get("name"),
                expires_at=data.get("expires_at"),
                limits={f: data[f] for f in preset_services.KEY_LIMIT_FIELDS if f in data},
                actor=self.actor,
            )
        except REFUSALS as exc:
            raise refusal(exc) from None

    def perform_update(self, key: ApiKey, body: BaseSerializer) -> ApiKey:
        changes = dict(body.validated_data)
        settings = {f: changes.pop(f) for f in preset_services.EDITABLE_SETTINGS if f in changes}
        limits = {f: changes.pop(f) for f in preset_services.KEY_LIMIT_FIELDS if f in changes}
        try:
            updated = preset_services.update_key_with_settings(
                key, changes, settings, limits, actor=self.actor
            )
        except REFUSALS as exc:
            raise refusal(exc) from None
        except preset_services.SettingsInvalid as exc:
            raise invalid(str(exc), param=exc.problems[0].path) from None
        except (preset_services.SettingsNameTaken, budget_services.LimitsNameTaken) as exc:
            raise invalid(f"name: {exc}", param="name", code="settings_name_taken") from None
        return updated
