"""A workspace's audit log over the management API (SPEC R-OBS-4, R-MGT-1):
`GET /api/v1/workspaces/{ws}/audit`, its AdminEvents newest first, filtered by query
parameters and paged by cursor (audit/cursor.py: keyset, no `COUNT(*)`).

Built on `management_api.base.WorkspaceScopedAPIView`, so a request is authenticated, another
workspace's token gets a 404, and the one predicate decides (`read`: every role, a viewer
too). Only the workspace's own events are listed; an apply's run event (no workspace: the
catalog) never is. The services wrote the events (audit/events.py); this view only reads
them, and shows `changes` as stored: secrets were replaced by `[secret]` before the insert.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet
from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from audit.cursor import MAX_LIMIT, Cursor, page, parse_limit
from audit.models import AdminEvent
from management_api.base import WorkspaceScopedAPIView, invalid
from management_api.schema import ErrorSerializer
from workspaces.models import Workspace

FILTERS = ("action", "actor", "target", "since", "until")
PARAMETERS = (*FILTERS, "cursor", "limit")
PREFIX_WILDCARD = ".*"  # `route.*`: every action of that family
MAX_ID_DIGITS = 19  # a BigAutoField id; a longer one is no cursor of ours


class AuditEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField(
        help_text="Who: a username, `token:<name>`, `cli:<command>`, `rollout-guard`, "
        "or `switchyard` (budget alerts)."
    )
    action = serializers.CharField(help_text="What, e.g. `api_key.create`, `route.deploy`.")
    target = serializers.CharField(
        help_text="What it was done to: a key's prefix, a slug, `<route> v<n>`, a scope."
    )
    changes = serializers.DictField(
        help_text='`{"<field>": {"before": …, "after": …}}` for each field that changed '
        "(before null: created; after null: deleted), beside entries that say more "
        "(`diff`, `numbers`, `objects`, …). A secret's value is always `[secret]`."
    )


class AuditPageSerializer(serializers.Serializer):
    object = serializers.CharField(help_text="Always `list`.")
    data = AuditEventSerializer(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="Pass as `cursor` for the next page; null on the last page."
    )


QUERY_PARAMETERS = [
    OpenApiParameter(
        "action",
        str,
        description="Exact (`route.deploy`), or a family with a trailing `.*` (`route.*`).",
    ),
    OpenApiParameter("actor", str, description="Exact: `token:ci-bot`, `alice`, `cli:apply`."),
    OpenApiParameter("target", str, description="Exact: `sk-sy-JbNqZSfKWRU3`, `support v3`."),
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="From this time (inclusive)."),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="Before this time."),
    OpenApiParameter("limit", int, description=f"Events per page, 1–{MAX_LIMIT} (default 50)."),
    OpenApiParameter("cursor", str, description="`next_cursor` of the page before."),
]


class AuditLogView(WorkspaceScopedAPIView):
    """The workspace's admin events (R-OBS-4): who changed what, when, with the before
    and after of each field."""

    @extend_schema(
        operation_id="audit_list",
        summary="The workspace's audit log, newest first",
        parameters=QUERY_PARAMETERS,
        responses={
            200: AuditPageSerializer,
            400: OpenApiResponse(
                ErrorSerializer, description="A bad filter, cursor or limit (`param` names it)."
            ),
        },
    )
    def get(self, request: Request, ws: str) -> Response:
        rows, next_cursor = events_page(self.workspace, request.query_params)
        body = {"object": "list", "data": rows, "next_cursor": next_cursor}
        return Response(AuditPageSerializer(body).data)


def events_page(workspace: Workspace, params: QueryDict) -> tuple[list[AdminEvent], str | None]:
    """One page of the workspace's events as `params` ask (the API's and the console's)."""
    events = filtered(AdminEvent.objects.filter(workspace=workspace), params)
    return page(events, _cursor(params), _limit(params))


def filtered(events: QuerySet[AdminEvent], params: QueryDict) -> QuerySet[AdminEvent]:
    """`events` narrowed by the query's filters; a 400 naming the first bad parameter.
    Unknown parameters are refused: a misspelt filter must not quietly return everything
    (as the traces list does, audit/trace_log.py)."""
    unknown = sorted(set(params) - set(PARAMETERS))
    if unknown:
        known = ", ".join(PARAMETERS)
        raise invalid(f"Unknown parameter `{unknown[0]}`; known: {known}.", param=unknown[0])
    action = params.get("action")
    if action is not None and action.endswith(PREFIX_WILDCARD):
        events = events.filter(action__startswith=action.removesuffix("*"))
    elif action is not None:
        events = events.filter(action=action)
    for name in ("actor", "target"):
        if name in params:
            events = events.filter(**{name: params[name]})
    since, until = _instant(params, "since"), _instant(params, "until")
    if since is not None and until is not None and until <= since:
        raise invalid("`until` must be later than `since`.", param="until")
    if since is not None:
        events = events.filter(created_at__gte=since)
    if until is not None:
        events = events.filter(created_at__lt=until)
    return events


def _instant(params: QueryDict, name: str) -> datetime | None:
    """`since` / `until` as the traces list reads them: ISO 8601 with a time zone."""
    if name not in params:
        return None
    text = params[name].replace(" ", "+")  # an unencoded `+02:00` arrives as a space
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        message = f"`{name}` must be an ISO 8601 time, e.g. 2026-12-01T10:00:00Z."
        raise invalid(message, param=name) from None
    if value.tzinfo is None:
        raise invalid(f"`{name}` needs a time zone (e.g. a trailing Z for UTC).", param=name)
    return value


def _cursor(params: QueryDict) -> Cursor | None:
    text = params.get("cursor")
    if not text:  # `cursor=`: the first page
        return None
    try:
        cursor = Cursor.decode(text)
    except ValueError as error:
        raise invalid(str(error), param="cursor") from None
    if not (cursor.id.isascii() and cursor.id.isdigit() and len(cursor.id) <= MAX_ID_DIGITS):
        raise invalid("`cursor` is not a cursor this API returned.", param="cursor")
    return cursor


def _limit(params: QueryDict) -> int:
    try:
        return parse_limit(params.get("limit"))
    except ValueError as error:
        raise invalid(str(error), param="limit") from None
