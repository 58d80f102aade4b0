"""`manage.py fakeupstream`: serve a fake upstream provider (see docs/fakeupstream.md).

Only parses options; the server lives in fakeupstream and needs no Django setup.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from fakeupstream.cli import add_arguments, config_from_options
from fakeupstream.server import run


class Command(BaseCommand):
    help = "Serve a fake OpenAI/Anthropic-compatible upstream with fault injection."
    requires_system_checks: list[str] = []  # no database or app checks needed to serve

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        run(config_from_options(options))
