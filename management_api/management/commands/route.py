"""`manage.py route deploy|rollback|diff|replay ROUTE --workspace WS [...]` (SPEC
R-ROUTE-2, R-BEY-3, D-25): put a route version in effect on every replica, go back to an
earlier one, see what differs between two versions node by node, or replay a version over
the recorded traffic of its keys. Every change is audited (presets/services.py).

    route deploy ROUTE --workspace WS [--version N]      default: the newest version
    route rollback ROUTE --workspace WS [--version N]    default: the one deployed before
    route diff ROUTE --workspace WS --from N [--to M]    default --to: the deployed version
    route replay ROUTE --workspace WS --version N [--since 24h] [--json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from gateway.state.snapshot import load_snapshot
from presets.models import Route
from presets.replay import parse_duration, replay_route
from presets.services import RouteError, deploy_route, diff_versions, rollback_route
from routing.engine.routes import RouteInvalid

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
        replay = actions.add_parser("replay")
        replay.add_argument("route")
        replay.add_argument("--workspace", required=True)
        replay.add_argument("--version", type=int, required=True)
        replay.add_argument("--since", default="24h", type=_duration, help="30m, 24h, 7d")
        replay.add_argument("--json", action="store_true", help="the report as JSON")
        replay.add_argument(
            "--predictions",
            action="store_true",
            help="with --json: each request's predicted node, model and endpoint",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug, workspace = options["route"], options["workspace"]
        route = Route.objects.filter(workspace__slug=workspace, slug=slug).first()
        if route is None:
            raise CommandError(f"no route {slug!r} in workspace {workspace!r}")
        if options["action"] == "replay":
            self._replay(route, options)
            return
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

    def _replay(self, route: Route, options: dict[str, Any]) -> None:
        try:
            report = replay_route(
                route,
                options["version"],
                since_s=options["since"],
                configuration=load_snapshot(),
            )
        except (LookupError, RouteInvalid) as error:
            raise CommandError(str(error)) from None
        data = report.as_json(with_predictions=options["predictions"])
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
            return
        changed = data["changed"]
        self.stdout.write(
            f"{route.slug} v{report.version} replayed over {data['total']} requests "
            f"(deployed: v{report.deployed}): {changed['node']} to another node, "
            f"{changed['model']} to another model, {changed['endpoint']} to another endpoint, "
            f"{data['refused']} refused; cost {data['cost_delta_usd']:+.6f} USD"
        )
        for trace_id in data["sample"]:
            self.stdout.write(f"  changed: {trace_id}")


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
