"""The route studio's pages (SPEC R-ROUTE-1, R-ROUTE-2, R-BEY-4): the workspace's routes,
one route — its graph drawn, its YAML in an editor, its versions, the rollout guard's panel
— and saving an edit as a new draft version.

Saving goes through `presets.services.save_route`, the write `apply`, `manage.py` and the
management API use: the engine's validator (every problem with its node and field, shown
beside the editor), one transaction, an audit event with the diff. A saved version routes
nothing until it is deployed (D-25): the studio's release pages do that
(console/route_release_views.py).
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Max
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.access import Access, access
from console.route_diagram import layout_route
from console.route_text import (
    LocatedProblem,
    RouteTextError,
    locate,
    read_route_text,
    route_text,
)
from console.route_watch import (
    guard_history,
    guard_panel,
    node_traffic,
    version_status,
)
from presets.catalog import catalog_names
from presets.models import KeySettings, Route, RouteVersion
from presets.services import MAX_MESSAGE_CHARS, save_route
from routing.engine.routes import Route as RouteGraph
from routing.engine.routes import RouteInvalid, parse_route
from workspaces.permissions import Action

REPLAY_WINDOWS = ("1h", "24h", "7d")
EDITOR_MIN_ROWS, EDITOR_MAX_ROWS = 10, 48  # the editor shows the whole route, up to a screen
NEW_ROUTE_TEXT = """\
description: what this route is for
models: ["*"]
start: pick
nodes:
  pick: {type: model, model: requested}
"""


def route_of(seen: Access, slug: str) -> Route:
    route = Route.objects.filter(workspace=seen.workspace, slug=slug).select_related("deployed")
    found = route.first()
    if found is None:
        raise Http404(f"No route {slug!r}.")
    return found


def graph_of(version: RouteVersion | None) -> tuple[RouteGraph | None, list[str]]:
    """The version parsed against today's catalog, or the problems that stop it."""
    if version is None:
        return None, []
    try:
        return parse_route(version.content, path="", catalog=catalog_names()), []
    except RouteInvalid as error:
        return None, [str(problem) for problem in error.problems]


@login_required
def routes(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    rows = Route.objects.filter(workspace=seen.workspace).select_related("deployed")
    rows = list(rows.annotate(newest=Max("versions__number")).order_by("slug"))
    traffic = node_traffic(seen.workspace, time.time(), [route.slug for route in rows])
    keys = KeySettings.objects.filter(workspace=seen.workspace).names_by_route()
    listed = [
        {
            "route": route,
            "keys": keys.get(route.slug, []),
            "guard": (route.deployed.content.get("rollout_guard") if route.deployed else None),
            "traffic": traffic.by_version.get((route.slug, route.deployed.number), [])
            if route.deployed
            else [],
        }
        for route in rows
    ]
    context = {"access": seen, "section": "routes", "rows": listed, "traffic": traffic}
    return render(request, "console/routes.html", context)


@login_required
def new_route(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    return _editor_page(request, seen, None, {"text": NEW_ROUTE_TEXT}, [])


@login_required
def route(request: HttpRequest, ws: str, slug: str) -> HttpResponse:
    seen = access(request.user, ws)
    found = route_of(seen, slug)
    newest = found.versions.order_by("-number").first()
    draft = {"text": route_text(newest.content) if newest else NEW_ROUTE_TEXT}
    return _editor_page(request, seen, found, draft, [])


def _editor_page(
    request: HttpRequest,
    seen: Access,
    found: Route | None,
    draft: dict[str, str],
    problems: list[LocatedProblem],
    status: int = 200,
) -> HttpResponse:
    rows = min(max(draft["text"].count("\n") + 2, EDITOR_MIN_ROWS), EDITOR_MAX_ROWS)
    context: dict[str, Any] = {
        "access": seen,
        "section": "routes",
        "route": found,
        "draft": draft,
        "problems": problems,
        "editor_rows": rows,
        "message_max": MAX_MESSAGE_CHARS,
    }
    if found is not None:
        context |= _studio(seen, found, request.GET.get("version", ""))
    return render(request, "console/route.html", context, status=status)


def _studio(seen: Access, found: Route, asked: str) -> dict[str, Any]:
    """Everything the route page shows beside the editor."""
    now = time.time()
    versions = list(found.versions.order_by("-number"))
    deployed = found.deployed
    by_number = {v.number: v for v in versions}
    shown = by_number.get(int(asked)) if asked.isdigit() else None
    shown = shown or deployed or (versions[0] if versions else None)
    graph, graph_problems = graph_of(shown)
    traffic = node_traffic(seen.workspace, now, [found.slug])
    counts = (
        {s.node: s.requests for s in traffic.by_version.get((found.slug, shown.number), [])}
        if shown
        else {}
    )
    deployed_graph = graph if shown is deployed else graph_of(deployed)[0]
    guard = deployed_graph.rollout_guard if deployed_graph else None
    attached = KeySettings.objects.filter(workspace=seen.workspace).names_by_route()
    return {
        "versions": [(v, version_status(v, deployed)) for v in versions],
        "shown": shown,
        "graph_problems": graph_problems,
        "diagram": layout_route(graph, traffic=counts) if graph else None,
        "traffic": traffic,
        "keys": attached.get(found.slug, []),
        "guard": guard_panel(found, guard, now),
        "guard_history": guard_history(found),
        "replay_windows": REPLAY_WINDOWS,
        "newest": versions[0] if versions else None,
    }


@login_required
@require_POST
def save(request: HttpRequest, ws: str) -> HttpResponse:
    """Save the editor's text as the route's next draft version (a new route with its first)."""
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    slug = request.POST.get("slug", "").strip()
    text = request.POST.get("text", "")
    message = request.POST.get("message", "")
    is_new = request.POST.get("new") == "1"
    existing = Route.objects.filter(workspace=seen.workspace, slug=slug).first() if slug else None
    draft = {"text": text, "message": message, "slug": slug}
    try:
        if not slug:
            raise RouteTextError("slug: a route needs a name such as support-routing")
        if is_new and existing is not None:
            raise RouteTextError(f"slug: route {slug!r} exists already: edit it on its page")
        content = read_route_text(text, slug)
        saved = save_route(
            seen.workspace, content, actor=request.user.get_username(), message=message
        )
    except RouteTextError as error:
        problem = LocatedProblem("", "", str(error))
        return _editor_page(request, seen, existing, draft, [problem], status=400)
    except RouteInvalid as error:
        found = [locate(problem) for problem in error.problems]
        return _editor_page(request, seen, existing, draft, found, status=400)
    number = saved.version.number
    if saved.created:
        note = f"Saved as version {number}, a draft: it routes nothing until it is deployed."
    else:
        note = f"Nothing changed: version {number} already says this."
    messages.success(request, note)
    return redirect("console:route", ws=seen.workspace.slug, slug=slug)
