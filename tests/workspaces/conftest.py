"""Fixtures of the tenancy and management-API tests: two workspaces (`acme`, and
`globex` for the outsider), management tokens per role, API clients holding them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from workspaces.models import Workspace
from workspaces.services import create_management_token


@pytest.fixture
def workspace(db: None) -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def other_workspace(db: None) -> Workspace:
    return Workspace.objects.create(slug="globex", name="Globex")


@pytest.fixture
def make_token(workspace: Workspace) -> Callable[..., str]:
    def make(role: str, *, name: str | None = None, of: Workspace | None = None) -> str:
        return create_management_token(
            of or workspace, role=role, name=name or f"{role}-bot", actor="test"
        ).plaintext

    return make


@pytest.fixture
def api_as(make_token: Callable[..., str]) -> Callable[..., APIClient]:
    """`api_as("viewer")`: a client sending a fresh viewer token of `acme`."""

    def client(role: str, **kwargs: object) -> APIClient:
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(role, **kwargs)}")
        return api

    return client
