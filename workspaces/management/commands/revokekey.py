"""`manage.py revokekey KEY_OR_PREFIX`: revoke a workspace API key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from workspaces.services import UnknownKey, find_key, revoke_api_key


class Command(BaseCommand):
    help = "Revoke an API key, given the key itself or its sk-sy-<id> prefix."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="the key, or its prefix sk-sy-<lookup id>")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key = find_key(options["key"])
        except UnknownKey as exc:
            raise CommandError(str(exc)) from None
        if revoke_api_key(key, actor="cli:revokekey"):
            self.stdout.write(f"revoked {key.prefix}")
        else:
            self.stdout.write(f"{key.prefix} was already revoked")
