"""`manage.py bootstrap --demo`: an admin user, the demo catalog and workspaces (from
gateway/demo/switchyard-demo.yaml) and a fresh demo key, printed once. Every write goes
through a service, so each is audited (actor `cli:bootstrap`)."""

from __future__ import annotations

import secrets
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from management_api.config_apply import apply_config
from workspaces.models import Workspace
from workspaces.services import create_superuser, rotate_api_key, set_membership

# The gateway's package data (pyproject.toml), found wherever the package is installed.
DEMO_CONFIG = resources.files("gateway") / "demo" / "switchyard-demo.yaml"


def _admin_password() -> str:
    """Generated once into var/ so a second `make run` prints the same password."""
    path = Path(settings.VAR_DIR) / "demo-admin-password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(12))
        path.chmod(0o600)
    return path.read_text().strip()


class Command(BaseCommand):
    help = "Set up a demo installation: admin user, fake providers, workspaces, a key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--demo", action="store_true", help="create the demo installation")
        parser.add_argument("--key-file", help="also write the new demo key to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["demo"]:
            raise CommandError("only `bootstrap --demo` exists so far")
        demo = yaml.safe_load(DEMO_CONFIG.read_text())
        report = apply_config(demo, actor="cli:bootstrap", deploy=True)  # its routes too
        password = _admin_password()
        if not get_user_model().objects.filter(username="admin").exists():
            create_superuser(
                "admin", email="admin@example.invalid", password=password, actor="cli:bootstrap"
            )
        admin = get_user_model().objects.get(username="admin")
        slugs = [w["slug"] for w in demo["workspaces"]]
        for each in Workspace.objects.filter(slug__in=slugs):
            # the console shows a person the workspaces they are a member of
            set_membership(each, admin, role="owner", actor="cli:bootstrap")
        workspace = Workspace.objects.get(slug="demo")
        # A new demo key each run; the one made by an earlier run is revoked (D-24 names).
        key = rotate_api_key(workspace, name="demo", actor="cli:bootstrap").plaintext
        if options["key_file"]:
            Path(options["key_file"]).write_text(key + "\n")
        self.stdout.write(f"demo catalog applied: {report.summary()}")
        self.stdout.write(f"console login: admin / {password}")
        self.stdout.write(f"demo API key (shown once): {key}")
