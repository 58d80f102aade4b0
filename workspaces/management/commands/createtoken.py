"""`manage.py createtoken --workspace SLUG --role ROLE [--name NAME]`: a management-API
token bound to that workspace and role (SPEC R-MGT-1), printed alone on stdout, once.

Use it as `Authorization: Bearer <token>` on `/api/v1/workspaces/SLUG/…`. Token names
are unique among the workspace's live tokens (default: token-<lookup id>); the audit log
names the token's actions `token:<name>`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from workspaces.models import Workspace
from workspaces.permissions import Role
from workspaces.services import DuplicateName, InvalidName, create_management_token


class Command(BaseCommand):
    help = "Create a management-API token and print it (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument(
            "--role",
            required=True,
            choices=[role.value for role in Role],
            help="owner and admin edit, member reads and uses, viewer reads",
        )
        parser.add_argument(
            "--name", default=None, help="unique in the workspace (default: token-<lookup id>)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"no workspace {options['workspace']!r}")
        try:
            created = create_management_token(
                workspace, role=options["role"], name=options["name"], actor="cli:createtoken"
            )
        except (DuplicateName, InvalidName) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(created.plaintext)
