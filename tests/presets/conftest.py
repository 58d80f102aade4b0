"""Shared fixtures of the management API's presets, routes and key-settings tests: a second
workspace, and clients acting with a management token of a given role (each test module
defines its own `acme`)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.presets.clients import client_as
from workspaces.models import Workspace


@pytest.fixture
def globex(db: None) -> Workspace:
    return Workspace.objects.create(slug="globex", name="Globex")


@pytest.fixture
def owner(acme: Workspace) -> APIClient:
    return client_as(acme, "owner", "deployer")
