"""The management API's workspace resources. So far: API keys (SPEC R-MGT-1, R-KEY-1).

    GET    /api/v1/workspaces/{ws}/keys        list (read)
    POST   /api/v1/workspaces/{ws}/keys        create (edit) → 201 with the secret, once
    GET    /api/v1/workspaces/{ws}/keys/{id}   one key (read); {id} is its lookup id
    PATCH  /api/v1/workspaces/{ws}/keys/{id}   name, expires_at (edit)
    DELETE /api/v1/workspaces/{ws}/keys/{id}   revoke (edit) → 204; revoking again is a no-op

Thin: validate with the serializer, write through `workspaces.services`, render.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from workspaces import services
from workspaces.api import ApiProblem, WorkspaceScopedViewSet, invalid
from workspaces.models import ApiKey
from workspaces.serializers import ApiKeySerializer, IssuedApiKeySerializer

# A service's refusal of a user's request is a 400; the service wrote nothing.
REFUSALS = (services.DuplicateName, services.InvalidName, services.KeyRevoked)


def refusal(exc: Exception) -> ApiProblem:
    if isinstance(exc, services.DuplicateName):
        return invalid(f"name: {exc}", param="name", code="duplicate_name")
    if isinstance(exc, services.KeyRevoked):
        return invalid(f"{exc}; a revoked key cannot be changed", code="key_revoked")
    return invalid(f"name: {exc}", param="name")


@extend_schema_view(
    list=extend_schema(summary="List the workspace's API keys, newest first"),
    retrieve=extend_schema(summary="One API key"),
    create=extend_schema(
        summary="Create an API key; the response holds its secret, this once",
        responses={201: IssuedApiKeySerializer},
    ),
    partial_update=extend_schema(summary="Rename a key or change its expiry"),
    destroy=extend_schema(
        summary="Revoke a key (refused by every gateway within 2 s)",
        responses={204: OpenApiResponse(description="Revoked (or already was)")},
    ),
)
class ApiKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, WorkspaceScopedViewSet):
    """The workspace's API keys (`/v1` credentials). A key's secret is shown once, in the
    response that created it; revoking is final and reaches every gateway within 2 s."""

    # (Its docstring is the schema's description.) To extend the resource, e.g. with key
    # settings stored in presets: subclass the serializers (Meta.fields += ...) and this
    # viewset, set `serializer_class` / `issued_serializer_class`, extend
    # `perform_create` / `perform_update` inside one `transaction.atomic()` around
    # `super()`, and register the subclass under `keys` in place of this one.

    queryset = ApiKey.objects.order_by("-created_at", "-id")
    serializer_class = ApiKeySerializer
    issued_serializer_class = IssuedApiKeySerializer
    lookup_field = "lookup_id"
    lookup_url_kwarg = "id"
    not_found_message = "No API key {id!r} in workspace {ws!r}."
    not_found_code = "key_not_found"

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "now": timezone.now()}

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        created = self.perform_create(body)
        context = {**self.get_serializer_context(), "plaintext": created.plaintext}
        shown = self.issued_serializer_class(created.api_key, context=context)
        response = Response(shown.data, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"  # it holds a secret: no cache keeps it
        return response

    def perform_create(self, body: BaseSerializer) -> services.CreatedKey:
        data = body.validated_data
        try:
            return services.create_api_key(
                self.workspace,
                name=data.get("name"),
                expires_at=data.get("expires_at"),
                actor=self.actor,
            )
        except REFUSALS as exc:
            raise refusal(exc) from None

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = self.get_object()
        body = self.get_serializer(key, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        key = self.perform_update(key, body)
        return Response(self.get_serializer(key).data)

    def perform_update(self, key: ApiKey, body: BaseSerializer) -> ApiKey:
        try:
            return services.update_api_key(key, body.validated_data, actor=self.actor)
        except REFUSALS as exc:
            raise refusal(exc) from None

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.revoke_api_key(self.get_object(), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
