"""The management API's dynamic routes (SPEC R-MGT-1, R-ROUTE-1, R-ROUTE-2, D-25), under
`/api/v1/workspaces/{ws}/`:

    GET    routes                        list: slug, deployed and newest version (read)
    GET    routes/{slug}                 the route with its deployed content (read)
    GET    routes/{slug}/versions        its versions, oldest first (read)
    POST   routes/{slug}/versions        save a draft (edit) → 201, or 200 when unchanged
    GET    routes/{slug}/versions/{n}    one version with its content (read)
    GET    routes/{slug}/diff?from=N&to=M   the diff; `to` default: the deployed (read)
    POST   routes/{slug}/deploy          {version} default: the newest (edit)
    POST   routes/{slug}/rollback        {version} default: the one deployed before (edit)

Thin: validate by the engine's `parse_route` (inside `presets.services.save_route`, the
rules `apply` uses), write through `presets.services`, render.
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
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from management_api import runtime
from management_api.base import ApiProblem, WorkspaceScopedViewSet, invalid, not_found
from management_api.preset_serializers import (
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
)
from management_api.schema import error_response
from presets.models import Route, RouteVersion
from presets.replay import parse_duration, replay_route
from presets.services import (
    MAX_MESSAGE_CHARS,
    RouteError,
    deploy_route,
    diff_versions,
    rollback_route,
    save_route,
)
from routing.engine.routes import RouteInvalid
from workspaces.permissions import Action

SLUG_PATTERN = "[-a-zA-Z0-9_]+"  # declarative.fields.SLUG, Django's SlugField

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
            400: error_response("A bad version number, or no `to` while nothing is deployed."),
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
            report = replay_route(
                route, number, since_s=since_s, configuration=runtime.configuration()
            )
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
