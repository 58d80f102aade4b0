"""`switchyard`, the installed command (`[project.scripts]`): Django's management commands
with Switchyard's settings, so an install without the source tree (the image) runs
`switchyard migrate`, `switchyard serve` or `switchyard createkey` as a checkout runs
`manage.py`."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
