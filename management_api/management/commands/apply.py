"""`manage.py apply -f FILE.yaml [--dry-run] [--deploy]`: validate a configuration file and
create or update what it describes, all or nothing (docs/configuration.md); `--deploy` also
deploys each route it names. Prints the report; on an invalid file prints every problem,
one per line, to stderr and exits with status 1."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from declarative.fields import ConfigError
from management_api.config_apply import apply_config


def load_yaml(text: str, name: str) -> Any:
    """`yaml.safe_load`, with a syntax error turned into `name:line:column: problem`."""
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark, context = exc.problem_mark, exc.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        message = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context and context:
            message += f" ({exc.context} at line {context.line + 1}, column {context.column + 1})"
        raise ConfigError([f"{where}: {message}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{name}: {exc}"]) from None


class Command(BaseCommand):
    help = "Apply a declarative configuration file (idempotent, all or nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-f", "--file", required=True, help="YAML file, or - for stdin")
        parser.add_argument(
            "--dry-run", action="store_true", help="validate and report, then roll back"
        )
        parser.add_argument(
            "--deploy",
            action="store_true",
            help="also deploy each route of the file at its newest version",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["file"]
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {name}: {exc.strerror}") from None
        try:
            report = apply_config(
                load_yaml(text, name),
                actor="cli:apply",
                target="" if name == "-" else Path(name).name,
                dry_run=options["dry_run"],
                deploy=options["deploy"],
            )
        except ConfigError as exc:
            for error in exc.errors:
                self.stderr.write(error)
            count = len(exc.errors)
            raise CommandError(
                f"{count} problem{'s' if count != 1 else ''} in {name}; nothing was written",
                returncode=1,
            ) from None
        self.stdout.write(report.render())
