"""Which key names attach a route (D-23): the one query the console's route and budget pages
and replay share."""

from __future__ import annotations

import pytest

from presets.models import KeySettings
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db


def test_names_by_route_lists_each_routes_key_names_sorted_within_the_workspace() -> None:
    # given
    acme = Workspace.objects.create(slug="acme", name="ACME")
    globex = Workspace.objects.create(slug="globex", name="Globex")
    KeySettings.objects.create(workspace=acme, name="web", routes=["support", "sales"])
    KeySettings.objects.create(workspace=acme, name="bot", routes=["support"])
    KeySettings.objects.create(workspace=acme, name="plain")
    KeySettings.objects.create(workspace=globex, name="theirs", routes=["support"])

    # when
    found = KeySettings.objects.filter(workspace=acme).names_by_route()

    # then
    assert found == {"support": ["bot", "web"], "sales": ["web"]}
