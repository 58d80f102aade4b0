"""`manage.py bootstrap --demo`, what `make run` starts from: the demo catalog (the
gateway's package data) applied, an admin who owns the demo workspaces, and a demo key
written to the key file."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from workspaces.models import ApiKey, Membership, Workspace

pytestmark = pytest.mark.django_db


def test_bootstrap_demo_sets_up_the_demo_installation(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    key_file = tmp_path / "demo-key"
    # when
    out = io.StringIO()
    call_command("bootstrap", "--demo", "--key-file", str(key_file), stdout=out)
    # then the demo workspace has the key written to the file, and the admin owns it
    key = key_file.read_text().strip()
    demo = Workspace.objects.get(slug="demo")
    assert ApiKey.objects.get(workspace=demo, name="demo", revoked_at=None).lookup_id in key
    admin = get_user_model().objects.get(username="admin")
    assert Membership.objects.get(workspace=demo, user=admin).role == "owner"
    assert "demo catalog applied" in out.getvalue()
