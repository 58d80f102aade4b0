"""The live metrics page (SPEC R-OBS-2): the workspace's own traffic per provider or per
endpoint — requests, error rate, latency p50/p90/p99, time to first token p50 and traffic
share over the last 15 minutes, hour or day — drawn by console/static/console/live.js,
which fetches `live_data` every few seconds without reloading the page.

Only the workspace's traces are read, never another tenant's or the fleet's: one query,
the newest `MAX_ROWS` of the window in the order of the (workspace, -created_at, -id)
index, and the page says when that cap cut the window short. The numbers are
console/live_series.py's; `window` and `by` live in the URL, so a view can be bookmarked."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.db.models import Case, F, JSONField, When
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.utils import timezone

from audit.models import RequestTrace
from console.access import access
from console.live_series import GROUPINGS, WINDOWS, Frame, Row, Summary, build_series, frame_of
from workspaces.models import Workspace

# Rows read per window at most: 20,000 short tuples are a few MB and well under a second
# to read and sort, every refresh; a busier workspace sees its newest 20,000 (the page
# says so) rather than a page that slows with its traffic.
MAX_ROWS = 20_000
REFRESH_S = 10  # how often live.js fetches the data again (while the tab is visible)
DEFAULTS = {"window": "15m", "by": "provider"}
CHOICES = {"window": tuple(WINDOWS), "by": GROUPINGS}
# (metric of the series, title, unit): one chart each, a line per provider or endpoint.
CHARTS = (
    ("requests", "Requests per bucket", "count"),
    ("share", "Traffic share", "percent"),
    ("error_rate", "Error rate (5xx)", "percent"),
    ("p50", "Latency p50", "ms"),
    ("p90", "Latency p90", "ms"),
    ("p99", "Latency p99", "ms"),
    ("ttft_p50", "Time to first token p50 (streams)", "ms"),
)


class BadParams(ValueError):
    """A query parameter the caller got wrong; `param` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def parse_params(get: QueryDict) -> dict[str, str]:
    """`window` and `by` from the URL, an empty one as its default. Anything else is
    refused: a misspelt `windw=24h` must not quietly show the last 15 minutes."""
    for name in get:
        if name not in CHOICES:
            raise BadParams(name, f"Unknown parameter `{name}`; the page takes `window` and `by`.")
    chosen = {}
    for name, choices in CHOICES.items():
        value = get.get(name, "").strip() or DEFAULTS[name]
        if value not in choices:
            raise BadParams(name, f"`{name}` must be one of {', '.join(choices)}, not {value!r}.")
        chosen[name] = value
    return chosen


def read_rows(workspace: Workspace, frame: Frame) -> tuple[list[Row], bool]:
    """The workspace's newest traces in `frame`, at most MAX_ROWS, and whether there were
    more. The attempts are read only for a request no endpoint answered (its provider is
    ""): live_series counts it for its last attempt's endpoint."""
    tried = Case(When(provider="", then=F("attempts")), output_field=JSONField())
    traces = (
        RequestTrace.objects.filter(
            workspace=workspace,
            created_at__gte=datetime.fromtimestamp(frame.start_s, UTC),
            created_at__lt=datetime.fromtimestamp(frame.end_s, UTC),
        )
        .order_by("-created_at", "-id")
        .values_list(
            "created_at", "provider", "endpoint", "status_code", "latency_ms", "ttfb_ms", tried
        )
    )
    rows = list(traces[: MAX_ROWS + 1])
    return rows[:MAX_ROWS], len(rows) > MAX_ROWS


def live_json(workspace: Workspace, params: dict[str, str], now: datetime) -> dict[str, Any]:
    """What `live_data` answers: live_series' buckets, groups, series, totals and overall,
    with the window read. `complete_from`: where the counted rows start — the frame's
    start, or the oldest row read when the cap cut the window short (`capped`)."""
    frame = frame_of(WINDOWS[params["window"]], now)
    rows, capped = read_rows(workspace, frame)
    return {
        "window": params["window"],
        "by": params["by"],
        "bucket_s": frame.bucket_s,
        "start": frame.start_s,
        "end": frame.end_s,
        "max_rows": MAX_ROWS,
        "capped": capped,
        "complete_from": int(rows[-1][0].timestamp()) if capped else frame.start_s,
        **build_series(rows, frame, params["by"]),
    }


@login_required
def live_data(request: HttpRequest, ws: str) -> JsonResponse:
    seen = access(request.user, ws)
    try:
        params = parse_params(request.GET)
    except BadParams as error:  # the management API's error envelope
        problem = {
            "message": str(error),
            "type": "invalid_request_error",
            "param": error.param,
            "code": "invalid_request",
        }
        return JsonResponse({"error": problem}, status=400)
    response = JsonResponse(live_json(seen.workspace, params, timezone.now()))
    response["Cache-Control"] = "no-store"
    return response


@login_required
def live_metrics(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    context: dict[str, Any] = {
        "access": seen,
        "section": "live",
        "windows": list(WINDOWS),
        "groupings": GROUPINGS,
        "charts": CHARTS,
        "refresh_s": REFRESH_S,
        "max_rows": MAX_ROWS,
    }
    try:
        params = parse_params(request.GET)
    except BadParams as error:  # the form, with the problem and the defaults chosen
        context.update(params=DEFAULTS, problem=str(error))
        return render(request, "console/live.html", context, status=400)
    data = live_json(seen.workspace, params, timezone.now())
    context.update(
        params=params,
        query=urlencode(params),
        data=data,
        table=[_shown(name, data["totals"][name]) for name in data["groups"]],
        overall=_shown("All", data["overall"]),
        complete_from=_utc(data["complete_from"]),
        bucket=f"{data['bucket_s'] // 60} min",
    )
    return render(request, "console/live.html", context)


def _shown(name: str, summary: Summary) -> dict[str, str]:
    """A row of the totals table, formatted as live.js formats it on each refresh."""
    return {
        "name": name,
        "requests": str(summary["requests"]),
        "share": _percent(summary["share"]),
        "error_rate": _percent(summary["error_rate"]),
        "p50": _ms(summary["p50"]),
        "p90": _ms(summary["p90"]),
        "p99": _ms(summary["p99"]),
        "ttft_p50": _ms(summary["ttft_p50"]),
    }


def _percent(fraction: float | None) -> str:
    return "—" if fraction is None else f"{100 * fraction:.1f} %"


def _ms(value: int | None) -> str:
    return "—" if value is None else f"{value} ms"


def _utc(epoch_s: int) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%d %H:%M:%S")
