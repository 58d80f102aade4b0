"""The console's personas: a person of each role in `acme`, and an outsider who owns
`globex` — each a Django test client signed in as them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from workspaces.models import Workspace
from workspaces.services import set_membership

ROLES = ("owner", "admin", "member", "viewer")
PASSWORD = "a long enough password"


@pytest.fixture
def acme() -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def globex() -> Workspace:
    return Workspace.objects.create(slug="globex", name="Globex")


def person(workspace: Workspace, role: str) -> Client:
    user = get_user_model().objects.create_user(f"{role}-{workspace.slug}", password=PASSWORD)
    set_membership(workspace, user, role=role, actor="test")
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
def people(acme: Workspace, globex: Workspace) -> dict[str, Client]:
    found = {role: person(acme, role) for role in ROLES}
    found["outsider"] = person(globex, "owner")
    return found
