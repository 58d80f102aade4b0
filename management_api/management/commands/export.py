"""`manage.py export [--workspace SLUG] [-o FILE]`: the configuration as YAML that
`manage.py apply -f` reads back. Secrets are never exported: each stored key becomes an
`api_key_env` variable name, listed in a comment at the top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from management_api.config_export import export_config, secret_variables


def render_yaml(document: dict[str, Any]) -> str:
    header = "# Exported by `manage.py export`; apply with `manage.py apply -f FILE`.\n"
    variables = secret_variables(document)
    if variables:
        header += "# Secrets are not exported. Set these variables before applying:\n"
        header += "".join(f"#   {name}\n" for name in variables)
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return header + body


class Command(BaseCommand):
    help = "Print the configuration as YAML (never secrets)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="only this workspace (not the catalog)")
        parser.add_argument("-o", "--output", help="write to this file instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            document = export_config(workspace=options["workspace"])
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        text = render_yaml(document)
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            self.stdout.write(text, ending="")
