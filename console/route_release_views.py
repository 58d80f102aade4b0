"""Releasing a route version from the studio (SPEC R-ROUTE-2, R-BEY-3, D-25): compare any
two versions side by side, replay a version over the recorded traffic of the route's keys,
and deploy or roll back after a confirmation that shows the diff against what is deployed
and the keys whose requests change.

Deploy and rollback call `presets.services.deploy_route` / `rollback_route` — atomic,
audited, in effect on every gateway within 2 s — as `manage.py route` and the management
API do. Replay is `presets.replay.replay_route`: no upstream is called and no content read,
so a member may run it (`Action.USE`); nothing is written.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from audit.models import RequestTrace
from console.access import Access, access
from console.route_diagram import layout_route
from console.route_sides import marks, side_by_side
from console.route_views import REPLAY_WINDOWS, graph_of, route_of
from gateway.state.snapshot import load_snapshot
from presets.models import KeySettings, Route, RouteVersion
from presets.replay import parse_duration, replay_route
from presets.services import RouteError, deploy_route, rollback_route
from routing.engine.routes import RouteInvalid
from workspaces.permissions import Action


def _number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _version(found: Route, number: int | None) -> RouteVersion | None:
    return found.versions.filter(number=number).first() if number is not None else None


def _comparison(old: RouteVersion | None, new: RouteVersion | None) -> dict[str, Any]:
    """The side-by-side table and both diagrams, marked, for `old` → `new`."""
    sections = side_by_side(old.content if old else {}, new.content if new else {})
    marked = marks(sections)
    old_graph, new_graph = graph_of(old)[0], graph_of(new)[0]
    removed = {n: m for n, m in marked.items() if m == "removed"}
    return {
        "sections": sections,
        "old_title": f"v{old.number}" if old else "nothing deployed",
        "new_title": f"v{new.number}" if new else "—",
        "old_diagram": layout_route(old_graph, marked=removed) if old_graph else None,
        "new_diagram": layout_route(new_graph, marked=marked) if new_graph else None,
    }


@login_required
def diff(request: HttpRequest, ws: str, slug: str) -> HttpResponse:
    seen = access(request.user, ws)
    found = route_of(seen, slug)
    versions = list(found.versions.order_by("-number"))
    asked_from, asked_to = _number(request.GET.get("from")), _number(request.GET.get("to"))
    new = _version(found, asked_to) if asked_to else found.deployed or next(iter(versions), None)
    old = _version(found, asked_from) if asked_from else None
    if asked_from is None and new is not None:  # by default: the version before `new`
        old = found.versions.filter(number__lt=new.number).order_by("-number").first()
    unknown = (asked_from and old is None) or (asked_to and new is None)
    context = {
        "access": seen,
        "section": "routes",
        "route": found,
        "old": old,
        "new": new,
        "versions": versions,
        **_comparison(old, new),
    }
    return render(request, "console/route_diff.html", context, status=400 if unknown else 200)


def _release_page(
    request: HttpRequest, seen: Access, found: Route, kind: str, problem: str = ""
) -> HttpResponse:
    """The confirmation of a deploy or rollback: what changes, and for which keys."""
    number = _number(request.POST.get("version") or request.GET.get("version"))
    target = _version(found, number)
    if target is None and kind == "deploy":
        target = found.versions.order_by("-number").first()
    attached = KeySettings.objects.filter(workspace=seen.workspace).names_by_route()
    context = {
        "access": seen,
        "section": "routes",
        "route": found,
        "kind": kind,
        "target": target,
        "problem": problem,
        "keys": attached.get(found.slug, []),
        "earlier": found.versions.exclude(pk=found.deployed_id).order_by("-number"),
        **_comparison(found.deployed, target),
    }
    status = 400 if problem else 200
    return render(request, "console/route_release.html", context, status=status)


def _release(request: HttpRequest, ws: str, slug: str, kind: str) -> HttpResponse:
    seen = access(request.user, ws)
    found = route_of(seen, slug)
    if request.method != "POST":
        return _release_page(request, seen, found, kind)
    seen.require(Action.EDIT)
    number = _number(request.POST.get("version"))
    service = deploy_route if kind == "deploy" else rollback_route
    try:
        if request.POST.get("version") and _version(found, number) is None:
            raise RouteError(f"route {slug!r} has no version {request.POST['version']!r}")
        version = service(found, number, actor=request.user.get_username())
    except RouteError as error:
        return _release_page(request, seen, found, kind, problem=str(error))
    verb = "Deployed" if kind == "deploy" else "Rolled back to"
    messages.success(
        request, f"{verb} version {version.number}: in effect on every gateway within 2 seconds."
    )
    return redirect("console:route", ws=seen.workspace.slug, slug=slug)


@login_required
def deploy(request: HttpRequest, ws: str, slug: str) -> HttpResponse:
    return _release(request, ws, slug, "deploy")


@login_required
def rollback(request: HttpRequest, ws: str, slug: str) -> HttpResponse:
    return _release(request, ws, slug, "rollback")


@login_required
@require_POST
def replay(request: HttpRequest, ws: str, slug: str) -> HttpResponse:
    """What a version would have done to the window's recorded requests. Writes nothing."""
    seen = access(request.user, ws)
    seen.require(Action.USE)
    found = route_of(seen, slug)
    since = request.POST.get("since", "24h")
    target = _version(found, _number(request.POST.get("version")))
    context: dict[str, Any] = {
        "access": seen,
        "section": "routes",
        "route": found,
        "target": target,
        "since": since,
        "windows": REPLAY_WINDOWS,
    }
    try:
        if target is None:
            raise ValueError("choose a version of this route to replay")
        report = replay_route(
            found,
            target.number,
            since_s=parse_duration(since),
            configuration=load_snapshot(),
        )
    except (ValueError, RouteInvalid) as error:
        context["problem"] = str(error)
        return render(request, "console/route_replay.html", context, status=400)
    context |= {
        "report": report,
        "rows": _sample_rows(report.sample, report.predictions),
        "cost_delta": signed_usd(report.cost_delta_micros),
    }
    return render(request, "console/route_replay.html", context)


def signed_usd(micros: int) -> str:
    """+$0.036000, −$0.000003: a difference, signed before the currency."""
    sign = "−" if micros < 0 else "+"
    return f"{sign}${abs(micros) / 1_000_000:.6f}"


def _sample_rows(sample: list[str], predictions: dict[str, dict[str, Any]]) -> list[Any]:
    """The sample's traces as served beside what the version predicts, in sample order."""
    traces = RequestTrace.objects.filter(pk__in=sample).only(
        "id", "created_at", "route_node", "model", "endpoint", "status_code", "decision"
    )
    served = {str(trace.pk): trace for trace in traces}
    return [
        {
            "trace": served[trace_id],
            "would": predictions.get(trace_id, {}),
            "was_model": _served_model(served[trace_id]),
        }
        for trace_id in sample
        if trace_id in served
    ]


def _served_model(trace: RequestTrace) -> str:
    route = (trace.decision or {}).get("route") or {}
    return str(route.get("model") or trace.model or "")
