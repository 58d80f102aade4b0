"""`manage.py createuser USERNAME --workspace WS --role ROLE` (SPEC D-30): a console user
with that role in the workspace, or, for an existing user, the membership (a new one, or
the role changed).

A new user's password is read from `SWITCHYARD_USER_PASSWORD` or prompted for, never
taken from the command line (it would land in shell history and `ps`). An existing
user's password is left as it is."""

from __future__ import annotations

import getpass
import os
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from workspaces.models import Workspace
from workspaces.permissions import Role
from workspaces.services import create_console_user, set_membership

PASSWORD_ENV = "SWITCHYARD_USER_PASSWORD"
ACTOR = "cli:createuser"


class Command(BaseCommand):
    help = "Create a console user (or add a membership) with a role in a workspace."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument(
            "--role",
            required=True,
            choices=[role.value for role in Role],
            help="owner and admin edit, member reads and uses, viewer reads",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"no workspace {options['workspace']!r}")
        username, role = options["username"], options["role"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            password = self._password(username)
            create_console_user(workspace, username, password=password, role=role, actor=ACTOR)
            self.stdout.write(f"created user {username}: {role} in {workspace.slug}")
        else:
            set_membership(workspace, user, role=role, actor=ACTOR)
            self.stdout.write(f"user {username} exists: {role} in {workspace.slug}")

    def _password(self, username: str) -> str:
        password = os.environ.get(PASSWORD_ENV)
        if password is None:
            if not self.stdin_is_interactive():
                raise CommandError(f"set {PASSWORD_ENV}, or run in a terminal to be asked")
            password = getpass.getpass(f"Password for {username}: ")
            if getpass.getpass("Password (again): ") != password:
                raise CommandError("the passwords differ")
        try:
            validate_password(password, user=get_user_model()(username=username))
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        return password

    def stdin_is_interactive(self) -> bool:
        return os.isatty(0)
