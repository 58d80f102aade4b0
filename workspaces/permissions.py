"""Who may do what in a workspace (SPEC D-30, R-MGT-1): the one permission predicate.

Owner and admin change things; member reads everything and may use what only reads,
such as `explain`; viewer reads. The management API (`management_api.base.RoleAllows`) and the
console both ask `allows(role, action)`, so they cannot disagree. Pure: no Django.

Seeing a secret again is not an action: no role may, after it was saved.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """The values of `Membership.role` and `ManagementToken.role`."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    VIEWER = "viewer"


class Action(StrEnum):
    READ = "read"  # GET anything of the workspace (never a secret)
    USE = "use"  # run something that changes nothing: `explain`, a dry run
    EDIT = "edit"  # create, change, revoke, deploy, roll back

    @classmethod
    def for_method(cls, method: str) -> Action:
        """The default action of an HTTP method: safe methods read, the others edit."""
        return cls.READ if method.upper() in ("GET", "HEAD", "OPTIONS") else cls.EDIT


ALLOWED: dict[Role, frozenset[Action]] = {
    Role.OWNER: frozenset(Action),
    Role.ADMIN: frozenset(Action),
    Role.MEMBER: frozenset({Action.READ, Action.USE}),
    Role.VIEWER: frozenset({Action.READ}),
}


def allows(role: str | None, action: str) -> bool:
    """True when `role` may do `action`; an unknown role or action may do nothing."""
    if role is None:
        return False
    try:
        return Action(action) in ALLOWED[Role(role)]
    except ValueError:
        return False
