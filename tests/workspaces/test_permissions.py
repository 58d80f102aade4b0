"""The one permission predicate (SPEC D-30): owner and admin edit, member reads and
uses, viewer reads; anything unknown may do nothing."""

from __future__ import annotations

import pytest

from workspaces.models import Membership
from workspaces.permissions import Action, Role, allows


@pytest.mark.parametrize(
    ("role", "action", "expected"),
    [
        ("owner", "read", True),
        ("owner", "use", True),
        ("owner", "edit", True),
        ("admin", "read", True),
        ("admin", "use", True),
        ("admin", "edit", True),
        ("member", "read", True),
        ("member", "use", True),
        ("member", "edit", False),
        ("viewer", "read", True),
        ("viewer", "use", False),
        ("viewer", "edit", False),
    ],
)
def test_each_role_may_do_exactly_its_actions(role, action, expected):
    # when / then
    assert allows(role, action) is expected
    assert allows(Role(role), Action(action)) is expected


@pytest.mark.parametrize(
    ("_case", "role", "action"),
    [
        ("no role (not a member)", None, "read"),
        ("unknown role", "superuser", "read"),
        ("unknown action", "owner", "delete"),
        ("role in another case", "Owner", "read"),
    ],
)
def test_anything_unknown_is_refused(_case, role, action):
    # when / then
    assert allows(role, action) is False


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("GET", Action.READ),
        ("head", Action.READ),
        ("OPTIONS", Action.READ),
        ("POST", Action.EDIT),
        ("PUT", Action.EDIT),
        ("PATCH", Action.EDIT),
        ("DELETE", Action.EDIT),
    ],
)
def test_safe_methods_read_and_the_others_edit(method, expected):
    # when / then
    assert Action.for_method(method) is expected


def test_the_predicate_knows_the_roles_memberships_store():
    # when / then
    assert [role.value for role in Role] == list(Membership.Role.values)
