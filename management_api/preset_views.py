"""The management API's presets, routes and key settings (SPEC R-MGT-1, R-PRE-1, R-ROUTE-2,
R-KEY-1, D-24, D-25), under `/api/v1/workspaces/{ws}/`:

    GET    presets                       list (read)
    POST   presets                       create (edit) → 201
    GET    presets/{slug}                one preset (read)
    PUT    presets/{slug}                replace it (edit)
    PATCH  presets/{slug}                change some of its fields (edit)
    DELETE presets/{slug}                delete it (edit) → 204; refused (400) while in use
    GET    routes                        list: slug, deployed and newest version (read)
    GET    routes/{slug}                 the route with its deployed content (read)
    GET    routes/{slug}/versions        its versions, oldest first (read)
    POST   routes/{slug}/versions        save a draft (edit) → 201, or 200 when unchanged
    GET    routes/{slug}/versions/{n}    one version with its content (read)
    GET    routes/{slug}/diff?from=N&to=M   the diff; `to` default: the deployed (read)
    POST   routes/{slug}/deploy          {version} default: the newest (edit)
    POST   routes/{slug}/rollback        {version} default: the one deployed before (edit)
    keys, keys/{id}                      management_api.tenancy_views' keys, with the settings, the
                                         budget and the rate limits of the key's name
                                         (GET), PATCH of them (edit); budget and limits
                                         on create too

Thin: validate by the rules `apply` uses (presets: `declarative.workspaces.parse_preset`;
routes: the engine's `parse_route`, inside `presets.services.save_route`), write through
`presets.services` (routes) and `presets.preset_services` (presets, key settings), render.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Max
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from declarative.fields import Issues
from declarative.types import PresetSpec
from declarative.workspaces import parse_preset
from gateway.replay import parse_duration, replay_route
from management_api.base import ApiProblem, WorkspaceScopedViewSet, invalid, not_found
from management_api.budget_serializers import key_budgets_by_name, key_limits_by_name
from management_api.preset_serializers import (
    ApiKeyCreateSerializer,
    ApiKeyWithSettingsSerializer,
    IssuedApiKeyWithSettingsSerializer,
    PresetReplaceSerializer,
    PresetSerializer,
    ReplayReportSerializer,
    ReplayRequestSerializer,
    RouteBodySerializer,
    RouteDeploymentSerializer,
    RouteDetailSerializer,
    RouteDiffSerializer,
    RouteSerializer,
    RouteVersionDetailSerializer,
    RouteVersionSerializer,
    VersionChoiceSerializer,
    key_settings_by_name,
)
from management_api.schema import ErrorSerializer
from management_api.tenancy_views import REFUSALS, ApiKeyViewSet, refusal
from presets import preset_services
from presets.models import Preset, Route, RouteVersion
from presets.services import (
    MAX_MESSAGE_CHARS,
    RouteError,
    deploy_route,
    diff_versions,
    rollback_route,
    save_route,
)
from routing.engine.routes import RouteInvalid
from workspaces import budget_services
from workspaces.models import ApiKey
from workspaces.permissions import Action
from workspaces.services import CreatedKey

SLUG_PATTERN = "[-a-zA-Z0-9_]+"  # declarative.fields.SLUG, Django's SlugField


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


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
            400: _error("Key settings use the preset (code `preset_in_use`); nothing changed."),
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


# Routes -----------------------------------------------------------------------------

VERSION_NUMBER = OpenApiParameter(
    "n", OpenApiTypes.INT, OpenApiParameter.PATH, description="the version number (1, 2, …)"
)
DIFF_FROM = OpenApiParameter(
    "from",
    OpenApiTypes.INT,
    OpenApiParameter.QUERY,
    required=True,
    description="the version to compare from",
)
DIFF_TO = OpenApiParameter(
    "to",
    OpenApiTypes.INT,
    OpenApiParameter.QUERY,
    description="the version to compare to; default: the deployed version",
)


def _route_invalid(error: RouteInvalid) -> ApiProblem:
    """Every problem of the route with its path, as `apply` lists them (relative to the
    body: `nodes.split.branches[1].next: unknown node 'canry'`)."""
    first = error.problems[0].path if error.problems else ""
    message = "; ".join(str(problem) for problem in error.problems) or "invalid route"
    return invalid(message, param=first or None, code="invalid_route")


def _query_number(request: Request, name: str, *, required: bool) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        if required:
            raise invalid(f"{name}: is required (a version number)", param=name)
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise invalid(f"{name}: must be a version number (1, 2, …), not {raw!r}", param=name)
    return int(raw)


@extend_schema_view(
    list=extend_schema(
        summary="List the workspace's routes with their deployed and newest version"
    ),
    retrieve=extend_schema(summary="One route, with the content of its deployed version"),
)
class RouteViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, WorkspaceScopedViewSet):
    """The workspace's dynamic routes (R-ROUTE-1/2, D-25): each saved change is a new
    immutable version; a version routes nothing until it is deployed; a deploy or
    rollback is in effect on every gateway within 2 s. Every write is audited."""

    queryset = (
        Route.objects.select_related("deployed")
        .annotate(newest_version=Max("versions__number"))
        .order_by("slug")
    )
    serializer_class = RouteSerializer
    lookup_field = "slug"
    lookup_value_regex = SLUG_PATTERN
    not_found_message = "No route {slug!r} in workspace {ws!r}."
    not_found_code = "route_not_found"
    action_permissions = {"replay": Action.USE}  # it changes nothing (D-30)

    def get_serializer_class(self) -> type[BaseSerializer]:
        return RouteDetailSerializer if self.action == "retrieve" else RouteSerializer

    def _version(self, route: Route, number: int) -> RouteVersion:
        version = route.versions.filter(number=number).first()
        if version is None:
            message = f"Route {route.slug!r} has no version {number}."
            raise not_found(message, code="version_not_found")
        return version

    @extend_schema(
        methods=["GET"],
        summary="The route's versions, oldest first",
        responses={200: RouteVersionSerializer(many=True)},
    )
    @extend_schema(
        methods=["POST"],
        summary="Save the route as a new draft version (the route is created with its first)",
        description="201 with the new version; 200 with the newest version when the route is "
        "unchanged (D-25). A route that does not validate is a 400 listing every problem "
        "with its path (code `invalid_route`); nothing is written.",
        request=RouteBodySerializer,
        responses={
            201: RouteVersionDetailSerializer,
            200: OpenApiResponse(
                RouteVersionDetailSerializer, description="Unchanged: the newest version"
            ),
        },
    )
    @action(detail=True, methods=["get", "post"], url_path="versions")
    def versions(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if request.method == "POST":
            return self._save(request, kwargs[self.lookup_field])
        route = self.get_object()
        versions = route.versions.order_by("number")
        shown = RouteVersionSerializer(versions, many=True, context={"route": route})
        return Response(shown.data)

    def _save(self, request: Request, slug: str) -> Response:
        body = request.data
        if not isinstance(body, Mapping):
            raise invalid("Expected a JSON object: the route (CONFIG.md shape) and a message.")
        content = dict(body)
        message = content.pop("message", "")
        if not isinstance(message, str):
            raise invalid("message: must be a string", param="message")
        if len(message) > MAX_MESSAGE_CHARS:
            raise invalid(
                f"message: must be at most {MAX_MESSAGE_CHARS} characters", param="message"
            )
        content.setdefault("slug", slug)
        if isinstance(content["slug"], str) and content["slug"] != slug:
            raise invalid(
                f"slug: {content['slug']!r} is not the route of the URL ({slug!r})",
                param="slug",
                code="slug_mismatch",
            )
        try:
            saved = save_route(self.workspace, content, actor=self.actor, message=message)
        except RouteInvalid as exc:
            raise _route_invalid(exc) from None
        shown = RouteVersionDetailSerializer(saved.version, context={"route": saved.route})
        return Response(shown.data, status=201 if saved.created else 200)

    @extend_schema(
        summary="One version of the route, with its content",
        parameters=[VERSION_NUMBER],
        responses={200: RouteVersionDetailSerializer},
    )
    @action(detail=True, methods=["get"], url_path=r"versions/(?P<n>[0-9]+)")
    def version(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        route = self.get_object()
        version = self._version(route, int(kwargs["n"]))
        return Response(RouteVersionDetailSerializer(version, context={"route": route}).data)

    @extend_schema(
        summary="The diff between two versions, node by node",
        parameters=[DIFF_FROM, DIFF_TO],
        responses={
            200: RouteDiffSerializer,
            400: _error("A bad version number, or no `to` while nothing is deployed."),
        },
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        route = self.get_object()
        from_number = _query_number(request, "from", required=True)
        to_number = _query_number(request, "to", required=False)
        for number in (from_number, to_number):
            if number is not None:
                self._version(route, number)
        try:
            lines = diff_versions(route, from_number or 0, to_number)
        except RouteError as exc:
            raise invalid(str(exc), param="to", code="not_deployed") from None
        to_shown = to_number if to_number is not None else route.deployed.number
        shown = RouteDiffSerializer(
            {"from_version": from_number, "to_version": to_shown, "lines": lines}
        )
        return Response(shown.data)

    @extend_schema(
        summary="Deploy a version (default: the newest)",
        description="In effect on every gateway within 2 s; audited with the diff. Deploying "
        "the deployed version changes nothing.",
        request=VersionChoiceSerializer,
        responses={200: RouteDeploymentSerializer},
    )
    @action(detail=True, methods=["post"])
    def deploy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self._put_in_effect(request, "nothing_to_deploy", deploy_route)

    @extend_schema(
        summary="Roll back to a version (default: the one deployed before the current one)",
        description="In effect on every gateway within 2 s; audited with the diff.",
        request=VersionChoiceSerializer,
        responses={200: RouteDeploymentSerializer},
    )
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self._put_in_effect(request, "nothing_to_roll_back", rollback_route)

    @extend_schema(
        summary="Replay a version over the recorded traffic of the route's keys",
        description="Calls no upstream and reads no content (R-BEY-3): each request of the "
        "window is walked through the version from the decision inputs its trace keeps. "
        "Changes nothing, so a member may run it.",
        request=ReplayRequestSerializer,
        responses={200: ReplayReportSerializer},
    )
    @action(detail=True, methods=["post"])
    def replay(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        route = self.get_object()
        body = ReplayRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        number = body.validated_data["version"]
        self._version(route, number)
        try:
            since_s = parse_duration(body.validated_data["since"])
        except ValueError as exc:
            raise invalid(str(exc), param="since") from None
        try:
            report = replay_route(route, number, since_s=since_s)
        except RouteInvalid as exc:
            problems = "; ".join(str(p) for p in exc.problems)
            raise invalid(
                f"Version {number} no longer validates: {problems}", code="invalid_route"
            ) from None
        return Response(ReplayReportSerializer(report.as_json()).data)

    def _put_in_effect(self, request: Request, code: str, service: Any) -> Response:
        route = self.get_object()
        body = VersionChoiceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        number = body.validated_data.get("version")
        if number is not None:
            self._version(route, number)
        previous = route.deployed.number if route.deployed else None
        try:
            version = service(route, number, actor=self.actor)
        except RouteError as exc:
            raise invalid(str(exc), code=code) from None
        shown = RouteDeploymentSerializer(
            {"slug": route.slug, "deployed_version": version.number, "previous_version": previous}
        )
        return Response(shown.data)


# Keys with their settings -----------------------------------------------------------


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
