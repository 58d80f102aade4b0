"""`manage.py route deploy|rollback|diff ROUTE --workspace WS [...]` (SPEC R-ROUTE-2, D-25):
put a route version in effect on every replica, go back to an earlier one, or see what
differs between two versions, node by node. Every change is audited (presets/services.py).

    route deploy ROUTE --workspace WS [--version N]      default: the newest version
    route rollback ROUTE --workspace WS [--version N]    default: the one deployed before
    route diff ROUTE --workspace WS --from N [--to M]    default --to: the deployed version
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from presets.models import Route
from presets.services import RouteError, deploy_route, diff_versions, rollback_route

ACTOR = "cli:route"


class Command(BaseCommand):
    help = "Deploy, roll back or diff the versions of a dynamic route."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        for name in ("deploy", "rollback"):
            action = actions.add_parser(name)
            action.add_argument("route")
            action.add_argument("--workspace", required=True)
            action.add_argument("--version", type=int, default=None)
        diff = actions.add_parser("diff")
        diff.add_argument("route")
        diff.add_argument("--workspace", required=True)
        diff.add_argument("--from", dest="from_version", type=int, required=True)
        diff.add_argument("--to", dest="to_version", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        slug, workspace = options["route"], options["workspace"]
        route = Route.objects.filter(workspace__slug=workspace, slug=slug).first()
        if route is None:
            raise CommandError(f"no route {slug!r} in workspace {workspace!r}")
        try:
            if options["action"] == "diff":
                lines = diff_versions(route, options["from_version"], options["to_version"])
                self.stdout.write("\n".join(lines) if lines else "no differences")
                return
            before = route.deployed.number if route.deployed else None
            act = deploy_route if options["action"] == "deploy" else rollback_route
            version = act(route, options["version"], actor=ACTOR)
        except RouteError as error:
            raise CommandError(str(error)) from None
        if before == version.number:
            self.stdout.write(f"{route.slug} v{version.number} is already deployed")
        else:
            was = f"v{before}" if before else "nothing"
            self.stdout.write(f"{route.slug}: v{version.number} deployed (was {was})")
