"""Management tokens (SPEC R-MGT-1): `sy-mt-<lookup>-<secret>`, stored as lookup id +
HMAC, bound to a workspace and a role; never usable as an API key, nor a key as one;
created and revoked through audited services and `manage.py createtoken`."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError

from audit.models import AdminEvent
from management_api.authentication import verify_management_token
from workspaces.keys import generate_key, generate_token, split_key, split_token
from workspaces.models import ManagementToken
from workspaces.services import (
    DuplicateTokenName,
    create_api_key,
    create_management_token,
    revoke_management_token,
)

PEPPER = "test-pepper"


def test_a_token_and_a_key_never_parse_as_each_other():
    # given
    token, key = generate_token(PEPPER), generate_key(PEPPER)
    # then
    assert token.plaintext.startswith("sy-mt-")
    assert key.plaintext.startswith("sk-sy-")
    assert split_token(token.plaintext) is not None
    assert split_key(token.plaintext) is None
    assert split_token(key.plaintext) is None


def test_created_token_verifies_and_stores_no_secret(workspace):
    # when
    created = create_management_token(workspace, role="admin", name="ci", actor="test")
    # then
    token = ManagementToken.objects.get()
    assert (token.workspace, token.name, token.role) == (workspace, "ci", "admin")
    secret = created.plaintext.split("-", 3)[3]
    assert created.plaintext == f"sy-mt-{token.lookup_id}-{secret}"
    assert secret not in token.secret_hmac
    assert verify_management_token(created.plaintext) == token


@pytest.mark.parametrize(
    ("_case", "mangle"),
    [
        ("wrong secret", lambda raw: raw[:-1] + ("A" if raw[-1] != "A" else "B")),
        ("unknown lookup id", lambda raw: "sy-mt-ZZZZZZZZZZZZ" + raw[18:]),
        ("malformed", lambda raw: raw[:20]),
        ("as an API key", lambda raw: "sk-sy-" + raw[6:]),
        ("empty", lambda raw: ""),
    ],
)
def test_anything_but_the_token_does_not_verify(workspace, _case, mangle):
    # given
    raw = create_management_token(workspace, role="owner", actor="test").plaintext
    # when / then
    assert verify_management_token(mangle(raw)) is None


def test_an_api_key_is_not_a_management_token(workspace):
    # given
    key = create_api_key(workspace, actor="test").plaintext
    # when / then
    assert verify_management_token(key) is None


def test_a_revoked_token_no_longer_verifies_and_the_revocation_is_audited(workspace):
    # given
    created = create_management_token(workspace, role="owner", name="old", actor="test")
    # when
    first = revoke_management_token(created.token, actor="alice")
    again = revoke_management_token(created.token, actor="alice")
    # then
    assert (first, again) == (True, False)
    assert verify_management_token(created.plaintext) is None
    event = AdminEvent.objects.get(action="management_token.revoke")
    assert (event.actor, event.workspace, event.target) == (
        "alice",
        workspace,
        created.token.prefix,
    )
    assert event.changes == {
        "revoked_at": {"before": None, "after": created.token.revoked_at.isoformat()}
    }


def test_token_creation_is_audited_without_the_secret(workspace):
    # when
    created = create_management_token(workspace, role="viewer", name="grafana", actor="bob")
    # then
    event = AdminEvent.objects.get()
    assert (event.actor, event.action, event.target) == (
        "bob",
        "management_token.create",
        created.token.prefix,
    )
    assert event.changes == {
        "name": {"before": None, "after": "grafana"},
        "role": {"before": None, "after": "viewer"},
    }
    stored = json.dumps(event.changes) + event.target
    assert created.plaintext not in stored
    assert created.token.secret_hmac not in stored


def test_an_unnamed_token_gets_a_generated_name(workspace):
    # when
    created = create_management_token(workspace, role="member", actor="test")
    # then
    assert created.token.name == f"token-{created.token.lookup_id}"


def test_a_live_token_name_is_refused_a_revoked_one_is_free(workspace):
    # given
    first = create_management_token(workspace, role="owner", name="ci", actor="test")
    # when
    with pytest.raises(DuplicateTokenName):
        create_management_token(workspace, role="viewer", name="ci", actor="test")
    # then
    assert ManagementToken.objects.count() == 1
    assert AdminEvent.objects.filter(action="management_token.create").count() == 1
    revoke_management_token(first.token, actor="test")
    again = create_management_token(workspace, role="viewer", name="ci", actor="test")
    assert again.token.name == "ci"


def test_the_database_refuses_two_live_tokens_of_one_name(workspace):
    # given
    create_management_token(workspace, role="owner", name="ci", actor="test")
    # when / then
    with pytest.raises(IntegrityError):
        ManagementToken.objects.create(
            workspace=workspace, name="ci", role="owner", lookup_id="x" * 12, secret_hmac="0"
        )


def test_an_unknown_role_is_refused_and_writes_nothing(workspace):
    # when
    with pytest.raises(ValueError):
        create_management_token(workspace, role="root", actor="test")
    # then
    assert ManagementToken.objects.count() == 0
    assert AdminEvent.objects.count() == 0


def test_createtoken_prints_the_token_alone(workspace):
    # given
    out = io.StringIO()
    # when
    call_command(
        "createtoken", "--workspace", "acme", "--role", "admin", "--name", "ci", stdout=out
    )
    # then
    printed = out.getvalue()
    token = ManagementToken.objects.get()
    assert printed.endswith("\n")
    assert printed.count("\n") == 1
    assert verify_management_token(printed.strip()) == token
    assert (token.name, token.role) == ("ci", "admin")
    assert AdminEvent.objects.get().actor == "cli:createtoken"


@pytest.mark.parametrize(
    ("_case", "argv", "message"),
    [
        ("duplicate name", ["--workspace", "acme", "--role", "owner", "--name", "taken"],
         "workspace 'acme' already has a management token named 'taken'"),
        ("unknown workspace", ["--workspace", "nope", "--role", "owner"], "no workspace 'nope'"),
    ],
)  # fmt: skip
def test_createtoken_refusals_exit_1_and_create_nothing(workspace, _case, argv, message):
    # given
    create_management_token(workspace, role="owner", name="taken", actor="test")
    # when
    with pytest.raises(CommandError) as refused:
        call_command("createtoken", *argv, stdout=io.StringIO())
    # then
    assert str(refused.value) == message
    assert refused.value.returncode == 1
    assert ManagementToken.objects.count() == 1


def test_createtoken_refuses_an_unknown_role(workspace):
    # when
    with pytest.raises(CommandError) as refused:
        call_command("createtoken", "--workspace", "acme", "--role", "root")
    # then
    assert "invalid choice: 'root'" in str(refused.value)
    assert ManagementToken.objects.count() == 0
