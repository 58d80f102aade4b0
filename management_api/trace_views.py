"""The request log of the management API (SPEC R-OBS-1, R-API-7, R-MGT-1), under
`/api/v1/workspaces/{ws}/`:

    GET traces          the workspace's traces, newest first: filters, cursor (read)
    GET traces/{id}     one trace with its decision record (read)

Filters and shapes are the request log's (audit/trace_log.py), shared with `/v1/traces`.
Reads the database only: traces a gateway worker still holds in memory (up to its
`SWITCHYARD_TRACE_FLUSH_S`) or in its spool (while the database was away) appear when
written."""

from __future__ import annotations

import uuid

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from audit import trace_log
from audit.models import RequestTrace
from management_api.base import WorkspaceScopedAPIView, invalid, not_found
from management_api.schema import ErrorSerializer
from workspaces.models import ApiKey

FILTER_PARAMETERS = [
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="From this time (inclusive)."),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="Before this time."),
    OpenApiParameter("key", str, description="API key names or prefixes, comma-separated."),
    OpenApiParameter("status", int, description="HTTP status code (D-31)."),
    OpenApiParameter("route_version", int, description="Route version (with `route`)."),
    OpenApiParameter("trace_id", OpenApiTypes.UUID),
    *(OpenApiParameter(name, str) for name in trace_log.TEXT_FILTERS),
    OpenApiParameter("limit", int, description="Rows per page, 1–200 (default 50)."),
    OpenApiParameter("cursor", str, description="`next_cursor` of the page before."),
]
BAD_QUERY = OpenApiResponse(ErrorSerializer, description="A filter or the cursor is wrong.")


class TraceListView(WorkspaceScopedAPIView):
    @extend_schema(
        operation_id="traces_list",
        summary="List the workspace's traces, newest first",
        parameters=FILTER_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, 400: BAD_QUERY},
    )
    def get(self, request: Request, ws: str) -> Response:
        try:
            query = trace_log.parse_query(request.query_params, allow_key=True)
        except trace_log.BadQuery as error:
            raise invalid(str(error), param=error.param) from None
        traces = RequestTrace.objects.filter(workspace=self.workspace)
        keys = ApiKey.objects.filter(workspace=self.workspace)
        return Response(trace_log.list_page(traces, keys, query))


class TraceDetailView(WorkspaceScopedAPIView):
    @extend_schema(
        operation_id="traces_retrieve",
        summary="One trace with its decision record",
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiResponse(ErrorSerializer)},
    )
    def get(self, request: Request, ws: str, trace_id: str) -> Response:
        missing = not_found(f"No trace {trace_id[:64]!r} in workspace {ws!r}.", "trace_not_found")
        try:
            wanted = uuid.UUID(trace_id)
        except ValueError:
            raise missing from None
        trace = RequestTrace.objects.filter(workspace=self.workspace, id=wanted).first()
        if trace is None:
            raise missing
        keys = ApiKey.objects.filter(workspace=self.workspace)
        return Response(trace_log.detail_json(trace, keys))
