"""Key names are unique among a workspace's live keys (SPEC D-24): in the service, in
`manage.py createkey --name`, in the database, and after migrating existing duplicates."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from audit.models import AdminEvent
from workspaces.models import ApiKey
from workspaces.services import (
    DuplicateKeyName,
    InvalidName,
    create_api_key,
    revoke_api_key,
    rotate_api_key,
)


def test_an_unnamed_key_is_named_after_its_lookup_id(workspace):
    # when
    key = create_api_key(workspace, actor="test").api_key
    # then
    assert key.name == f"key-{key.lookup_id}"


def test_two_unnamed_keys_get_two_names(workspace):
    # when
    first = create_api_key(workspace, actor="test").api_key
    second = create_api_key(workspace, actor="test").api_key
    # then
    assert first.name != second.name


def test_a_live_key_name_is_refused_and_nothing_is_written(workspace):
    # given
    create_api_key(workspace, name="ci", actor="test")
    # when
    with pytest.raises(DuplicateKeyName) as refused:
        create_api_key(workspace, name="ci", actor="test")
    # then
    assert str(refused.value) == "workspace 'acme' already has a key named 'ci'"
    assert ApiKey.objects.count() == 1
    assert AdminEvent.objects.count() == 1


def test_an_expired_key_still_holds_its_name(workspace):
    # given
    yesterday = timezone.now() - timedelta(days=1)
    create_api_key(workspace, name="ci", expires_at=yesterday, actor="test")
    # when / then
    with pytest.raises(DuplicateKeyName):
        create_api_key(workspace, name="ci", actor="test")


def test_a_revoked_key_frees_its_name(workspace):
    # given
    old = create_api_key(workspace, name="ci", actor="test").api_key
    revoke_api_key(old, actor="test")
    # when
    new = create_api_key(workspace, name="ci", actor="test").api_key
    # then
    assert ApiKey.objects.filter(name="ci").count() == 2
    assert new.revoked_at is None


def test_the_same_name_in_another_workspace_is_fine(workspace, other_workspace):
    # given
    create_api_key(workspace, name="ci", actor="test")
    # when
    other = create_api_key(other_workspace, name="ci", actor="test").api_key
    # then
    assert other.name == "ci"


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_blank_or_long_name_is_refused(workspace, name):
    # when
    with pytest.raises(InvalidName):
        create_api_key(workspace, name=name, actor="test")
    # then
    assert ApiKey.objects.count() == 0


def test_the_database_refuses_two_live_keys_of_one_name(workspace):
    # given
    create_api_key(workspace, name="ci", actor="test")
    # when / then
    with pytest.raises(IntegrityError):
        ApiKey.objects.create(workspace=workspace, name="ci", lookup_id="x" * 12, secret_hmac="0")


def test_the_database_lets_a_revoked_key_keep_a_live_name(workspace):
    # given
    create_api_key(workspace, name="ci", actor="test")
    # when
    ApiKey.objects.create(
        workspace=workspace,
        name="ci",
        lookup_id="x" * 12,
        secret_hmac="0",
        revoked_at=timezone.now(),
    )
    # then
    assert ApiKey.objects.filter(name="ci").count() == 2


def test_createkey_prints_the_key_alone(workspace):
    # given
    out = io.StringIO()
    # when
    call_command("createkey", "--workspace", "acme", "--name", "ci", stdout=out)
    # then
    key = ApiKey.objects.get()
    assert out.getvalue() == out.getvalue().strip() + "\n"
    assert out.getvalue().startswith(f"sk-sy-{key.lookup_id}-")
    assert key.name == "ci"


def test_createkey_without_a_name_generates_one(workspace):
    # when
    call_command("createkey", "--workspace", "acme", stdout=io.StringIO())
    # then
    key = ApiKey.objects.get()
    assert key.name == f"key-{key.lookup_id}"


def test_createkey_refuses_a_duplicate_name_exits_1_and_creates_nothing(workspace):
    # given
    call_command("createkey", "--workspace", "acme", "--name", "ci", stdout=io.StringIO())
    out = io.StringIO()
    # when
    with pytest.raises(CommandError) as refused:
        call_command("createkey", "--workspace", "acme", "--name", "ci", stdout=out)
    # then
    assert str(refused.value) == "workspace 'acme' already has a key named 'ci'"
    assert refused.value.returncode == 1
    assert out.getvalue() == ""
    assert ApiKey.objects.count() == 1


BEFORE = [("workspaces", "0001_initial")]
AFTER = [("workspaces", "0003_key_name_unique_management_token")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_the_oldest_name_and_suffixes_the_others():
    # given keys of 0001's schema, where names could repeat
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old_apps = executor.loader.project_state(BEFORE).apps
    Workspace = old_apps.get_model("workspaces", "Workspace")
    ApiKey0001 = old_apps.get_model("workspaces", "ApiKey")
    acme = Workspace.objects.create(slug="acme", name="Acme")
    other = Workspace.objects.create(slug="other", name="Other")
    now = timezone.now()

    def key(workspace, name, lookup_id, age_s, revoked=False):  # type: ignore[no-untyped-def]
        ApiKey0001.objects.create(
            workspace=workspace, name=name, lookup_id=lookup_id, secret_hmac="0",
            created_at=now - timedelta(seconds=age_s), revoked_at=now if revoked else None,
        )  # fmt: skip

    key(acme, "default", "newestAAAAAA", 10)
    key(acme, "default", "oldestAAAAAA", 30)
    key(acme, "default", "middleAAAAAA", 20)
    key(acme, "default", "revokedAAAAA", 40, revoked=True)
    key(acme, "x" * 100, "longAAAAAAAA", 10)
    key(acme, "x" * 100, "long2AAAAAAA", 5)
    key(other, "default", "otherAAAAAAA", 10)
    # when
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new_apps = executor.loader.project_state(AFTER).apps
        names = dict(
            new_apps.get_model("workspaces", "ApiKey").objects.values_list("lookup_id", "name")
        )
    finally:
        MigrationExecutor(connection).migrate(
            MigrationExecutor(connection).loader.graph.leaf_nodes()
        )
    # then
    assert names == {
        "oldestAAAAAA": "default",
        "middleAAAAAA": "default-middleAAAAAA",
        "newestAAAAAA": "default-newestAAAAAA",
        "revokedAAAAA": "default",
        "longAAAAAAAA": "x" * 100,
        "long2AAAAAAA": "x" * 87 + "-long2AAAAAAA",
        "otherAAAAAAA": "default",
    }


def test_rotating_revokes_the_live_key_of_the_name_and_reuses_it(workspace):
    # given
    old = create_api_key(workspace, name="demo", actor="test").api_key
    # when
    new = rotate_api_key(workspace, name="demo", actor="cli:bootstrap").api_key
    # then
    old.refresh_from_db()
    assert old.revoked_at is not None
    assert (new.name, new.revoked_at) == ("demo", None)
    actions = list(AdminEvent.objects.order_by("id").values_list("actor", "action"))
    assert actions == [
        ("test", "api_key.create"),
        ("cli:bootstrap", "api_key.revoke"),
        ("cli:bootstrap", "api_key.create"),
    ]


def test_rotating_a_name_no_key_has_just_creates_one(workspace):
    # when
    new = rotate_api_key(workspace, name="demo", actor="test").api_key
    # then
    assert list(ApiKey.objects.values_list("name", "revoked_at")) == [("demo", None)]
    assert new.name == "demo"
