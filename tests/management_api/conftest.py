"""Shared fixtures of the management API's tests: the tenancy tests' workspaces, tokens and
clients (tests/workspaces/conftest.py), and for the presets, routes, budgets and audit
tests a second workspace and an owner's client (each of those modules defines its own
`acme`)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.management_api.clients import client_as
from tests.workspaces.conftest import api_as, make_token, other_workspace, workspace
from workspaces.models import Workspace

__all__ = ["api_as", "make_token", "other_workspace", "workspace"]  # fixtures, shared


@pytest.fixture
def globex(db: None) -> Workspace:
    return Workspace.objects.create(slug="globex", name="Globex")


@pytest.fixture
def owner(acme: Workspace) -> APIClient:
    return client_as(acme, "owner", "deployer")
