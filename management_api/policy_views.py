"""The management API's workspace policy (SPEC R-MGT-1, R-POL-1), under
`/api/v1/workspaces/{ws}/`:

    GET  policy   the policy as the `policy:` section of a config file (read)
    PUT  policy   replace it whole (edit) → 200 with the policy as stored

A PUT goes through `apply_config` with the workspace's `policy:` section — the writer the
console's policy editor and `manage.py apply` use: the config file's validator (every
problem with its field, a 400 that writes nothing), one transaction, audited with each
changed field's before and after, and a new configuration version that every gateway
picks up within one snapshot poll. A field left out takes its default, as in a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from declarative.fields import ConfigError
from management_api.base import WorkspaceScopedAPIView, invalid
from management_api.config_apply import apply_config, workspace_section
from management_api.config_export import policy_document
from management_api.schema import ErrorSerializer
from workspaces.models import Policy

PREFIX = "workspaces[0].policy."  # the validator's paths, as the body names the fields


class PolicyView(WorkspaceScopedAPIView):
    """The workspace's policy (R-POL-1): residency, regions, providers, models, price
    caps, data classes, retention, the daily budget, routing mode, attempts, timeouts,
    cooldowns."""

    def _shown(self) -> dict[str, Any]:
        return policy_document(Policy.objects.filter(workspace=self.workspace).first() or Policy())

    @extend_schema(
        summary="The workspace's policy, as the `policy:` section of a config file",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, ws: str) -> Response:
        return Response(self._shown())

    @extend_schema(
        summary="Replace the workspace's policy (docs/configuration.md's `policy:` shape)",
        description="Validated as `apply` validates a file: a bad field is a 400 naming "
        "every problem (code `invalid_policy`), and nothing is written. Audited; in effect "
        "on every gateway within one snapshot poll.",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiResponse(ErrorSerializer)},
    )
    def put(self, request: Request, ws: str) -> Response:
        body = request.data
        if not isinstance(body, Mapping):
            raise invalid("Expected a JSON object: the policy (docs/configuration.md).")
        workspace = self.workspace
        try:
            apply_config(
                workspace_section(workspace.slug, workspace.name, "policy", dict(body)),
                actor=self.actor,
                target="api:policy",
                environ={},
            )
        except ConfigError as error:
            problems = [problem.removeprefix(PREFIX) for problem in error.errors]
            first = problems[0].split(":", 1)[0] if problems else None
            raise invalid("; ".join(problems), param=first, code="invalid_policy") from None
        return Response(self._shown())
