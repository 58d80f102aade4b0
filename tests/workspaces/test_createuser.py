"""`manage.py createuser USERNAME --workspace WS --role ROLE` (SPEC D-30): a console user
with a membership, the password from `SWITCHYARD_USER_PASSWORD` or a prompt, never the
command line; an existing user gets the membership (or the new role)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.models import AdminEvent
from workspaces.management.commands import createuser
from workspaces.models import Membership

PASSWORD = "correct horse battery"


def test_createuser_makes_a_user_with_the_role(workspace, monkeypatch):
    # given
    monkeypatch.setenv("SWITCHYARD_USER_PASSWORD", PASSWORD)
    out = io.StringIO()
    # when
    call_command("createuser", "carol", "--workspace", "acme", "--role", "member", stdout=out)
    # then
    user = get_user_model().objects.get(username="carol")
    assert user.check_password(PASSWORD)
    assert Membership.objects.get(user=user).role == "member"
    assert out.getvalue() == "created user carol: member in acme\n"
    events = AdminEvent.objects.order_by("id")
    assert [(e.actor, e.action, e.target, e.changes) for e in events] == [
        ("cli:createuser", "user.create", "user:carol",
         {"username": {"before": None, "after": "carol"}}),
        ("cli:createuser", "membership.create", "user:carol",
         {"role": {"before": None, "after": "member"}}),
    ]  # fmt: skip
    assert PASSWORD not in str([e.changes for e in AdminEvent.objects.all()])


def test_createuser_changes_the_role_of_an_existing_user(workspace, monkeypatch):
    # given
    monkeypatch.delenv("SWITCHYARD_USER_PASSWORD", raising=False)
    user = get_user_model().objects.create_user("dave", password=PASSWORD)
    Membership.objects.create(user=user, workspace=workspace, role="viewer")
    # when
    call_command(
        "createuser", "dave", "--workspace", "acme", "--role", "admin", stdout=io.StringIO()
    )
    # then
    assert Membership.objects.get(user=user).role == "admin"
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    event = AdminEvent.objects.get()
    assert (event.action, event.changes) == (
        "membership.update",
        {"role": {"before": "viewer", "after": "admin"}},
    )


def test_createuser_without_a_password_source_creates_nothing(workspace, monkeypatch):
    # given no variable, and no terminal to ask in
    monkeypatch.delenv("SWITCHYARD_USER_PASSWORD", raising=False)
    monkeypatch.setattr(createuser.Command, "stdin_is_interactive", lambda self: False)
    # when
    with pytest.raises(CommandError) as refused:
        call_command("createuser", "erin", "--workspace", "acme", "--role", "viewer")
    # then
    assert str(refused.value) == "set SWITCHYARD_USER_PASSWORD, or run in a terminal to be asked"
    assert not get_user_model().objects.filter(username="erin").exists()
    assert AdminEvent.objects.count() == 0


def test_createuser_refuses_a_weak_password(workspace, monkeypatch):
    # given
    monkeypatch.setenv("SWITCHYARD_USER_PASSWORD", "short")
    # when
    with pytest.raises(CommandError):
        call_command("createuser", "frank", "--workspace", "acme", "--role", "viewer")
    # then
    assert not get_user_model().objects.filter(username="frank").exists()
    assert Membership.objects.count() == 0
