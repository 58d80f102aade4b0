"""How the management API describes itself in OpenAPI (drf-spectacular; served at
`GET /api/v1/schema/`, gateway/urls.py).

`ManagementAutoSchema` is the schema of every `management_api.base` view: it tags an operation
with its resource (the path segment after `{ws}`) and adds the error responses every
operation can give, in the envelope `gateway.errors` renders (R-API-3). The token
authentication is described as an HTTP bearer scheme; DRF's session authentication is
described by drf-spectacular itself (`cookieAuth`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

ERRORS_OF_EVERY_OPERATION = {
    401: "Missing or invalid credentials (one body for all: code `invalid_token`).",
    403: "The caller's role may not do this (D-30), or a session request without CSRF token.",
    404: "No such workspace for the caller (another workspace's token gets this too), "
    "or no such object in it.",
}
ERRORS_OF_WRITES = {400: "A bad field or a duplicate name; nothing was changed."}


class ErrorDetailSerializer(serializers.Serializer):
    message = serializers.CharField()
    type = serializers.CharField(help_text="e.g. invalid_request_error, authentication_error")
    code = serializers.CharField(help_text="stable, e.g. invalid_token, duplicate_name")
    param = serializers.CharField(allow_null=True, help_text="the field at fault, if one")


class ErrorSerializer(serializers.Serializer):
    """`{"error": {"message", "type", "code", "param"}}`."""

    error = ErrorDetailSerializer()

    class Meta:
        ref_name = "Error"


class ManagementAutoSchema(AutoSchema):
    def get_tags(self) -> list[str]:
        parts = self.path.split("/")
        after_workspace = parts[parts.index("{ws}") + 1 :] if "{ws}" in parts else parts[-1:]
        return [after_workspace[0] if after_workspace else "workspaces"]

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        errors = dict(ERRORS_OF_EVERY_OPERATION)
        if self.method in ("POST", "PUT", "PATCH"):
            errors.update(ERRORS_OF_WRITES)
        for status, description in sorted(errors.items()):
            responses.setdefault(
                str(status),
                self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, description=description), str(status)
                ),
            )
        return responses


class ManagementTokenScheme(OpenApiAuthenticationExtension):
    target_class = "management_api.authentication.ManagementTokenAuthentication"
    name = "managementToken"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "sy-mt-<lookup>-<secret> (manage.py createtoken)",
        }


def error_response(description: str) -> OpenApiResponse:
    """An error answer of an operation in the schema: the envelope, and when it comes."""
    return OpenApiResponse(ErrorSerializer, description=description)
