"""The audit log in the console (SPEC R-OBS-4): who changed what and when, each field's
before and after — the management API's query (management_api/audit_views.py), shown for people."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.exceptions import APIException

from console.access import access
from management_api.audit_views import FILTERS, events_page


@login_required
def audit_log(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    params = request.GET.copy()
    for name in [n for n, v in params.items() if not v.strip()]:
        del params[name]
    problem = ""
    try:
        events, next_cursor = events_page(seen.workspace, params)
    except APIException as error:  # a bad filter: the API's own message
        problem, next_cursor = str(error.detail), None
        events = []
    more = params.copy()
    more["cursor"] = next_cursor or ""
    rows = [{"event": e, "changes": _changes(e.changes)} for e in events]
    context = {
        "access": seen,
        "section": "audit",
        "rows": rows,
        "problem": problem,
        "filters": {n: request.GET.get(n, "") for n in FILTERS},
        "next_query": more.urlencode() if next_cursor else "",
    }
    return render(request, "console/audit.html", context, status=400 if problem else 200)


def _changes(changes: dict[str, object]) -> list[tuple[str, str, str]]:
    """(field, before, after) of each changed field; other entries (a diff, numbers) as
    their JSON under `after`."""
    rows = []
    for name, change in sorted(changes.items()):
        if isinstance(change, dict) and set(change) == {"before", "after"}:
            rows.append((name, _shown(change["before"]), _shown(change["after"])))
        else:
            rows.append((name, "", _shown(change)))
    return rows


def _shown(value: object) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
