"""The request log and the trace page (SPEC R-OBS-1, R-BEY-1).

Both read through audit/trace_log.py, as the management API and `/v1/traces` do: the
same filters, the same cursor pages, one query for a page's traces and one for the names
of their keys — never a query per row. The filters live in the URL, so a filtered page
can be bookmarked and shared; `window` (15m, 1h, 24h, 7d) is the console's shorthand for
`since`. With htmx, a filter change swaps the table and pushes the URL."""

from __future__ import annotations

import uuid
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils import timezone

from audit import trace_log
from audit.models import RequestTrace
from console.access import access
from console.trace_view import attempt_chain, trace_page
from workspaces.models import ApiKey

WINDOWS = {
    "15m": timedelta(minutes=15),
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
}
FORM_FIELDS = (
    "window",
    "key",
    "model",
    "provider",
    "status",
    "error_code",
    "tier",
    "route",
    "route_version",
    "session_id",
    "trace_id",
)


def _query_params(get: QueryDict) -> dict[str, str]:
    """The request log's parameters from the console's URL: empty fields dropped,
    `window` turned into `since`."""
    params = {name: value.strip() for name, value in get.items() if value.strip()}
    window = params.pop("window", None)
    if window in WINDOWS and "since" not in params:
        params["since"] = (timezone.now() - WINDOWS[window]).isoformat()
    return params


@login_required
def request_log(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    problem = ""
    try:
        query = trace_log.parse_query(_query_params(request.GET), allow_key=True)
    except trace_log.BadQuery as error:
        problem = str(error)
        query = trace_log.parse_query({}, allow_key=True)
    traces = RequestTrace.objects.filter(workspace=seen.workspace)
    found = trace_log.list_page(traces, ApiKey.objects.filter(workspace=seen.workspace), query)
    rows = [
        {
            **row,
            "chain": attempt_chain(row["attempts"]),
            "shown_time": row["created_at"][:19].replace("T", " "),
        }
        for row in found["data"]
    ]
    first, more = request.GET.copy(), request.GET.copy()
    first.pop("cursor", None)
    more["cursor"] = found["next_cursor"] or ""
    context = {
        "access": seen,
        "section": "requests",
        "rows": rows,
        "problem": problem,
        "filters": {name: request.GET.get(name, "") for name in FORM_FIELDS},
        "windows": list(WINDOWS),
        "next_query": more.urlencode() if found["next_cursor"] else "",
        "first_query": first.urlencode() if request.GET.get("cursor") else None,
    }
    if request.headers.get("HX-Request") == "true":  # htmx swaps 2xx only: the problem shows
        response = render(request, "console/_request_rows.html", context)
        shown = {name: value for name, value in request.GET.items() if value.strip()}
        response["HX-Push-Url"] = f"{request.path}?{urlencode(shown)}" if shown else request.path
        return response
    return render(request, "console/request_log.html", context, status=400 if problem else 200)


@login_required
def trace(request: HttpRequest, ws: str, trace_id: uuid.UUID) -> HttpResponse:
    seen = access(request.user, ws)
    found = RequestTrace.objects.filter(workspace=seen.workspace, id=trace_id).first()
    if found is None:
        raise Http404("No such trace in this workspace.")
    detail = trace_log.detail_json(found, ApiKey.objects.filter(workspace=seen.workspace))
    context = {"access": seen, "section": "requests", "trace": detail, "page": trace_page(detail)}
    return render(request, "console/trace.html", context)
