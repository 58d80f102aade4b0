"""Who is looking at which workspace, and what they may do there (SPEC D-30, R-MGT-1).

Every console view starts here: the workspace of the URL and the signed-in person's role
in it, from their `Membership` — none is a 404, never a 403, so an outsider cannot learn
that a workspace exists. What the role may do is asked of the one predicate,
`workspaces.permissions.allows`, which the management API asks too: a button the console
hides is a request the API refuses, and the other way round."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from workspaces.models import Membership, Workspace
from workspaces.permissions import Action, allows


@dataclass(frozen=True, slots=True)
class Access:
    workspace: Workspace
    role: str
    workspaces: tuple[tuple[str, str], ...]  # (slug, name) of every membership: the switcher

    def may(self, action: str) -> bool:
        return allows(self.role, action)

    @property
    def can_edit(self) -> bool:
        return self.may(Action.EDIT)

    @property
    def can_use(self) -> bool:
        return self.may(Action.USE)

    def require(self, action: str) -> None:
        if not self.may(action):
            raise PermissionDenied(f"Role {self.role!r} may not {action} here.")


def memberships(user: AbstractBaseUser | AnonymousUser) -> list[tuple[str, str, str]]:
    """(slug, name, role) of each workspace `user` belongs to, by name."""
    rows = Membership.objects.filter(user_id=user.pk).select_related("workspace")
    found = [(m.workspace.slug, m.workspace.name, m.role) for m in rows]
    return sorted(found, key=lambda row: (row[1].lower(), row[0]))


def access(user: AbstractBaseUser | AnonymousUser, slug: str) -> Access:
    """The caller's access to workspace `slug`; Http404 when they have no role there."""
    mine = memberships(user)
    role = next((r for s, _n, r in mine if s == slug), None)
    workspace = Workspace.objects.filter(slug=slug).first() if role else None
    if workspace is None or role is None:
        raise Http404(f"No workspace {slug!r}.")
    return Access(workspace, role, tuple((s, n) for s, n, _r in mine))
