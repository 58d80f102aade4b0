"""The management API's shared parts (`/api/v1/workspaces/{ws}/…`, SPEC R-MGT-1): the
base views every resource of every app builds on, and how they fail.

A request goes: authenticate (`management_api.authentication`; nobody → 401) → resolve `{ws}`
to the workspace and the caller's role in it (no role there → 404, not 403: another
workspace's token must not learn that it exists) → the one predicate,
`workspaces.permissions.allows(role, action)` (→ 403). The action is `read` for safe
methods and `edit` for the others unless the view says otherwise in
`action_permissions` (e.g. `{"explain": Action.USE}`).

Errors are DRF exceptions that `gateway.errors.drf_exception_handler` (REST_FRAMEWORK's
EXCEPTION_HANDLER) renders in the API's envelope. A validation error becomes one 400
listing every problem as `path: message`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, NoReturn

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404, HttpResponseBase
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView
from rest_framework.viewsets import GenericViewSet

from management_api.authentication import InvalidToken, ManagementTokenAuthentication
from management_api.schema import ManagementAutoSchema
from workspaces.models import ManagementToken, Membership, Workspace
from workspaces.permissions import Action, allows


class ApiProblem(exceptions.APIException):
    """An error with its status, stable `code` and, where one field is at fault, `param`.

    `gateway.errors` renders `default_code` as the envelope's `code`, hence the instance
    attribute; it renders `param` too."""

    def __init__(self, status: int, message: str, *, code: str, param: str | None = None):
        super().__init__(detail=message, code=code)
        self.status_code = status
        self.default_code = code
        self.param = param


def not_found(message: str, code: str = "not_found") -> ApiProblem:
    return ApiProblem(404, message, code=code)


def invalid(message: str, *, param: str | None = None, code: str = "invalid_request") -> ApiProblem:
    return ApiProblem(400, message, code=code, param=param)


def _problems(detail: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(detail, Mapping):
        for field, inner in detail.items():
            field = "" if field == "non_field_errors" else str(field)
            yield from _problems(inner, f"{path}.{field}" if path and field else path or field)
    elif isinstance(detail, list) and all(isinstance(item, str) for item in detail):
        for message in detail:
            yield path, str(message)
    elif isinstance(detail, list):
        for index, inner in enumerate(detail):
            yield from _problems(inner, f"{path}[{index}]")
    else:
        yield path, str(detail)


def invalid_request(error: exceptions.ValidationError) -> ApiProblem:
    """One 400 for every problem of the body, each as `path: message` (the shape of
    `declarative.fields` reports); `param` is the first path."""
    problems = list(_problems(error.detail))
    message = "; ".join(f"{path}: {text}" if path else text for path, text in problems)
    return invalid(message or "invalid request", param=problems[0][0] if problems else None)


class RoleAllows(BasePermission):
    """The one predicate (D-30) asked for the action this request needs."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        scoped: WorkspaceScopeMixin = view
        action = scoped.required_action(request)
        if allows(scoped.role, action):
            return True
        self.message = (
            f"Role {scoped.role!r} may not {action} in workspace {scoped.workspace.slug!r} "
            f"(owner and admin edit, member reads and uses, viewer reads)."
        )
        return False


class WorkspaceScopeMixin:
    """What every management-API view shares; mix into an APIView or a GenericViewSet.

    After `check_permissions`: `self.workspace`, `self.role`, and `self.actor` (who the
    audit log names: `token:<name>` or the username)."""

    authentication_classes: ClassVar[list[type]] = [
        ManagementTokenAuthentication,
        SessionAuthentication,  # the console; enforces CSRF on unsafe methods
    ]
    permission_classes: ClassVar[list[type]] = [RoleAllows]
    parser_classes: ClassVar[list[type]] = [JSONParser]  # JSON bodies only, no form posts
    schema = ManagementAutoSchema()
    http_method_names: ClassVar[list[str]] = ["get", "post", "put", "patch", "delete", "head"]
    # viewset action (or handler) name -> the Action it needs, where not the method's default
    action_permissions: ClassVar[dict[str, Action]] = {}

    workspace: Workspace
    role: str
    request: Request
    kwargs: dict[str, Any]

    def required_action(self, request: Request) -> Action:
        name = getattr(self, "action", None) or request.method.lower()
        return self.action_permissions.get(name) or Action.for_method(request.method)

    @property
    def actor(self) -> str:
        return self.request.user.get_username()

    def check_permissions(self, request: Request) -> None:
        if request.user is None or not request.user.is_authenticated:
            raise InvalidToken()
        self.workspace, self.role = self._scope(request, self.kwargs["ws"])
        super().check_permissions(request)  # type: ignore[misc]

    def _scope(self, request: Request, slug: str) -> tuple[Workspace, str]:
        """The workspace of the URL and the caller's role there; 404 when there is none."""
        workspace = Workspace.objects.filter(slug=slug).first()
        role: str | None = None
        if workspace is not None and isinstance(request.auth, ManagementToken):
            role = request.auth.role if request.auth.workspace_id == workspace.pk else None
        elif workspace is not None:
            role = (
                Membership.objects.filter(workspace=workspace, user=request.user)
                .values_list("role", flat=True)
                .first()
            )
        if workspace is None or role is None:
            raise not_found(f"No workspace {slug!r}.", code="workspace_not_found")
        return workspace, role

    def permission_denied(
        self, request: Request, message: str | None = None, code: str | None = None
    ) -> NoReturn:
        """DRF's hook when a permission says no; authentication was settled before."""
        raise ApiProblem(403, message or "Permission denied.", code="permission_denied")

    def handle_exception(self, exc: Exception) -> HttpResponseBase:
        if isinstance(exc, exceptions.ValidationError):
            exc = invalid_request(exc)
        elif isinstance(exc, Http404):
            exc = not_found(str(exc) or "Not found.")
        elif isinstance(exc, DjangoPermissionDenied):
            exc = ApiProblem(403, str(exc) or "Permission denied.", code="permission_denied")
        response: HttpResponseBase = super().handle_exception(exc)  # type: ignore[misc]
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            response["WWW-Authenticate"] = auth_header
        return response


class WorkspaceScopedAPIView(WorkspaceScopeMixin, APIView):
    """For a resource that is one thing per workspace (`policy`) or an operation
    (`routes/{slug}/deploy`)."""


class WorkspaceScopedViewSet(WorkspaceScopeMixin, GenericViewSet):
    """For a collection of the workspace's rows: declare `queryset` (of a model with a
    `workspace` FK), the serializers and the actions; rows of other workspaces are never
    seen. Writes go through service functions (`perform_*` hooks), never `.save()`."""

    not_found_message: ClassVar[str] = "No such object in workspace {ws!r}."
    not_found_code: ClassVar[str] = "not_found"

    def get_queryset(self) -> QuerySet[Any]:
        queryset: QuerySet[Any] = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular drawing the schema
            return queryset.none()
        return queryset.filter(workspace=self.workspace)

    def get_object(self) -> Model:
        try:
            return super().get_object()
        except Http404:
            message = self.not_found_message.format(**{**self.kwargs, "ws": self.workspace.slug})
            raise not_found(message, code=self.not_found_code) from None
