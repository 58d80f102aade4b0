"""A management-API client acting with a new token of one role (tests/management_api)."""

from __future__ import annotations

from rest_framework.test import APIClient

from workspaces.models import Workspace
from workspaces.services import create_management_token


def client_as(workspace: Workspace, role: str, name: str | None = None) -> APIClient:
    token = create_management_token(
        workspace, role=role, name=name or f"{role}-bot", actor="test"
    ).plaintext
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api
