"""`manage.py createkey --workspace SLUG [--name NAME] [--expires-in-days N]`: prints the
new key alone on stdout, once (ARCHITECTURE.md contract).

Key names are unique among a workspace's live keys (D-24): a name already taken is an
error (exit 1) and nothing is created; without `--name` the key is `key-<lookup id>`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from workspaces.models import Workspace
from workspaces.services import DuplicateName, InvalidName, create_api_key


class Command(BaseCommand):
    help = "Create a workspace API key and print it (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument(
            "--name", default=None, help="unique in the workspace (default: key-<lookup id>)"
        )
        parser.add_argument("--expires-in-days", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"no workspace {options['workspace']!r}")
        days = options["expires_in_days"]
        expires_at = timezone.now() + timedelta(days=days) if days else None
        try:
            created = create_api_key(
                workspace, name=options["name"], actor="cli:createkey", expires_at=expires_at
            )
        except (DuplicateName, InvalidName) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(created.plaintext)
