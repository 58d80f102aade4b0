"""The management API's workspace resources: API keys and BYOK credentials (SPEC
R-MGT-1, R-KEY-1, R-BYOK-1, R-BEY-7).

    GET    /api/v1/workspaces/{ws}/keys        list (read)
    POST   /api/v1/workspaces/{ws}/keys        create (edit) → 201 with the secret, once
    GET    /api/v1/workspaces/{ws}/keys/{id}   one key (read); {id} is its lookup id
    PATCH  /api/v1/workspaces/{ws}/keys/{id}   name, expires_at (edit)
    DELETE /api/v1/workspaces/{ws}/keys/{id}   revoke (edit) → 204; revoking again is a no-op
    GET    /api/v1/workspaces/{ws}/credentials             list with health, no secret (read)
    POST   /api/v1/workspaces/{ws}/credentials             create (edit) → 201, no secret
    GET    /api/v1/workspaces/{ws}/credentials/{provider}  one credential (read)
    PUT    /api/v1/workspaces/{ws}/credentials/{provider}  replace; no `api_key`: kept (edit)
    DELETE /api/v1/workspaces/{ws}/credentials/{provider}  delete (edit) → 204

Thin: validate with the serializer, write through `workspaces.services` (keys) and
`workspaces.credential_services` (credentials), render.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from management_api import runtime
from management_api.base import ApiProblem, WorkspaceScopedViewSet, invalid
from management_api.tenancy_serializers import (
    ApiKeySerializer,
    CredentialReplaceSerializer,
    CredentialSerializer,
    IssuedApiKeySerializer,
)
from workspaces import credential_services, services
from workspaces.models import ApiKey, ProviderCredential

# A service's refusal of a user's request is a 400; the service wrote nothing.
REFUSALS = (services.DuplicateName, services.InvalidName, services.KeyRevoked)
SLUG_PATTERN = "[-a-zA-Z0-9_]+"  # a provider slug (Django's SlugField)


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

    # (Its docstring is the schema's description.) The `keys` resource served is its
    # subclass with the settings, budget and limits of each key's name
    # (preset_views.ApiKeyWithSettingsViewSet).

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
        """The write; the served subclass's (preset_views.ApiKeyWithSettingsViewSet)."""
        raise NotImplementedError

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = self.get_object()
        body = self.get_serializer(key, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        key = self.perform_update(key, body)
        return Response(self.get_serializer(key).data)

    def perform_update(self, key: ApiKey, body: BaseSerializer) -> ApiKey:
        """The write; the served subclass's (preset_views.ApiKeyWithSettingsViewSet)."""
        raise NotImplementedError

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.revoke_api_key(self.get_object(), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _credential_problem(exc: credential_services.CredentialInvalid) -> ApiProblem:
    return invalid(str(exc), param=exc.problems[0][0] if exc.problems else None)


@extend_schema_view(
    list=extend_schema(summary="List the workspace's own provider keys, with their health"),
    retrieve=extend_schema(summary="One credential, with its health"),
    create=extend_schema(
        summary="Save the workspace's own key for a provider (write-only)",
        responses={201: CredentialSerializer},
    ),
    update=extend_schema(
        summary="Replace a credential's rules and, if sent, its key",
        request=CredentialReplaceSerializer,
        responses={200: CredentialSerializer},
    ),
    destroy=extend_schema(
        summary="Delete a credential: calls to the provider carry the managed key again",
        responses={204: OpenApiResponse(description="Deleted")},
    ),
)
class CredentialViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, WorkspaceScopedViewSet):
    """The workspace's own provider keys (BYOK): one per provider, sealed with AES-256-GCM
    and never shown again, not even in the response that saved it. Restrictable to models
    and to API keys; `managed_fallback` decides whether a request it fails may use the
    managed key (docs/byok.md). `health` is the answering gateway worker's view."""

    queryset = ProviderCredential.objects.prefetch_related("api_keys").order_by("provider_slug")
    serializer_class = CredentialSerializer
    lookup_field = "provider_slug"
    lookup_url_kwarg = "provider"
    lookup_value_regex = SLUG_PATTERN
    not_found_message = "No credential for provider {provider!r} in workspace {ws!r}."
    not_found_code = "credential_not_found"

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if getattr(self, "swagger_fake_view", False) or self.request.method != "GET":
            return context
        providers = list(self.get_queryset().values_list("provider_slug", flat=True))
        return {**context, "health": self._health(providers)}

    def _health(self, providers: list[str]) -> dict[str, Any]:
        return dict(runtime.credentials_health(self.workspace.pk, providers))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            credential = credential_services.create_credential(
                self.workspace,
                data["provider_slug"],
                secret=data["api_key"],
                rules=_rules(data),
                actor=self.actor,
            )
        except credential_services.DuplicateCredential as exc:
            raise invalid(
                f"provider: {exc}", param="provider", code="duplicate_credential"
            ) from None
        except credential_services.CredentialInvalid as exc:
            raise _credential_problem(exc) from None
        return Response(self._shown(credential), status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        credential: ProviderCredential = self.get_object()
        body = CredentialReplaceSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if data.get("provider_slug", credential.provider_slug) != credential.provider_slug:
            raise invalid(
                f"provider: {data['provider_slug']!r} is not the credential of the URL "
                f"({credential.provider_slug!r}); a credential's provider does not change",
                param="provider",
                code="provider_mismatch",
            )
        try:
            credential = credential_services.replace_credential(
                credential, secret=data.get("api_key"), rules=_rules(data), actor=self.actor
            )
        except credential_services.CredentialInvalid as exc:
            raise _credential_problem(exc) from None
        return Response(self._shown(credential))

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        credential_services.delete_credential(self.get_object(), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _shown(self, credential: ProviderCredential) -> dict[str, Any]:
        """The credential as a GET shows it, health included."""
        fresh = self.get_queryset().get(pk=credential.pk)  # its keys, prefetched anew
        context = {**self.get_serializer_context(), "health": self._health([fresh.provider_slug])}
        return dict(CredentialSerializer(fresh, context=context).data)


def _rules(data: dict[str, Any]) -> credential_services.CredentialRules:
    return credential_services.CredentialRules(
        allowed_models=tuple(data.get("allowed_models", ())),
        api_keys=tuple(data.get("api_keys", ())),
        managed_fallback=data.get("managed_fallback", False),
    )
