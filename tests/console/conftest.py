"""The console's personas: a person of each role in `acme`, and an outsider who owns
`globex` — each a Django test client signed in as them. And, for every console test, the
budget and limit stores in this process.

Why in process: the test client calls the console's sync views with no event loop, so each
read of a store (`async_to_sync`) runs on a new loop, and a Redis client's pooled
connections belong to the loop that opened them. Under the gateway's ASGI server every
read runs on the worker's one loop; the Redis stores themselves are tested in
tests/budgets, and the console's pages against them in tests/browser."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from gateway.state import admission_state
from gateway.state.db_thread import close_connections
from workspaces.models import Workspace
from workspaces.services import set_membership

ROLES = ("owner", "admin", "member", "viewer")
PASSWORD = "a long enough password"


@pytest.fixture(autouse=True)
def _admission_in_process(settings) -> Iterator[None]:
    settings.ADMISSION_STORE = "memory"
    admission_state.reset()
    yield
    admission_state.reset()
    close_connections()  # the in-process store's ledger reads ran in the database thread


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
