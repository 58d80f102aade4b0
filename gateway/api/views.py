"""The /v1 API views. Thin: each hands the request to the request path
(gateway/request_path/serve.py) with its operation.

The hot-path views are plain async Django views rather than DRF APIViews: DRF's request
wrapping, negotiation and rendering cost about 20% of throughput on this path and give
it nothing (docs/decisions/0001-hot-path-views.md). The trace lookup is an adrf view.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from adrf.views import APIView
from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from rest_framework.request import Request

from audit import trace_log
from audit.models import RequestTrace
from gateway.api.anthropic.count_tokens import count_message_tokens, render_count
from gateway.api.anthropic.messages import MESSAGES, anthropic_model_list
from gateway.api.chat import CHAT
from gateway.api.embeddings import EMBEDDINGS
from gateway.api.explain import EXPLAIN
from gateway.api.model_listing import find_model, list_models
from gateway.api.responses import RESPONSES
from gateway.api.wire import json_response
from gateway.errors import ApiError, invalid, render_anthropic_error, render_error
from gateway.request_path.authenticate import (
    authenticate,
    authenticate_key,
    presented_key,
    snapshot_knowing_key,
)
from gateway.request_path.parse import read_json
from gateway.request_path.serve import serve
from gateway.state import request_state
from gateway.state.db_thread import in_db_thread
from routing.engine.live import WINDOW_S
from workspaces.models import ApiKey


@csrf_exempt
@require_POST
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    return await serve(request, CHAT)


@csrf_exempt
@require_POST
async def responses(request: HttpRequest) -> HttpResponseBase:
    return await serve(request, RESPONSES)


@csrf_exempt
@require_POST
async def messages(request: HttpRequest) -> HttpResponseBase:
    return await serve(request, MESSAGES)


@csrf_exempt
@require_POST
async def count_tokens(request: HttpRequest) -> HttpResponseBase:
    """`POST /v1/messages/count_tokens` (SPEC R-API-9): counted by the Anthropic upstream
    a Messages request would go to, else estimated (gateway/api/anthropic/count_tokens.py)."""
    snap = await snapshot_knowing_key(request)
    try:
        caller = authenticate(request, snap, time.time())
        body = read_json(request, request_state.gateway_settings().max_body_bytes)
        counted = await count_message_tokens(request, caller, body)
    except ApiError as error:
        return render_anthropic_error(error)
    return render_count(counted)


@csrf_exempt
@require_POST
async def embeddings(request: HttpRequest) -> HttpResponseBase:
    return await serve(request, EMBEDDINGS)


@csrf_exempt
@require_POST
async def explain(request: HttpRequest) -> HttpResponseBase:
    return await serve(request, EXPLAIN)


@require_GET
async def health(request: HttpRequest) -> HttpResponseBase:
    """`GET /health` (SPEC R-API-8): live numbers per provider and endpoint over the
    rolling five minutes, as this worker observed them; no authentication. With a
    workspace key, also that workspace's own credentials' health (R-BEY-7), by provider;
    a key that is sent but not valid is the usual 401. Never a secret."""
    shown: dict[str, object] = {
        "object": "switchyard.health",
        "window_s": WINDOW_S,
        "providers": request_state.live_by_provider(),
    }
    if presented_key(request):
        now = time.time()
        try:
            _key, workspace = authenticate_key(request, await snapshot_knowing_key(request), now)
        except ApiError as error:
            return render_error(error)
        shown["credentials"] = request_state.credentials_health(
            workspace.id, workspace.credentials.keys(), now
        )
    return json_response(shown)


@require_GET
async def models(request: HttpRequest) -> HttpResponseBase:
    """The models and routing names this key may use (SPEC D-7; gateway/api/model_listing)."""
    snap = await snapshot_knowing_key(request)
    try:
        key, workspace = authenticate_key(request, snap, time.time())
    except ApiError as error:
        return render_error(error)
    listed = list_models(snap, workspace, key)
    if "anthropic-version" in request.headers:  # the Anthropic SDK's list (SPEC R-API-9)
        return json_response(anthropic_model_list(listed))
    return json_response({"object": "list", "data": listed})


@require_GET
async def model_detail(request: HttpRequest, model_id: str) -> HttpResponseBase:
    """`GET /v1/models/{id}` (ids contain `/`): one entry of the list, else a 404."""
    snap = await snapshot_knowing_key(request)
    try:
        key, workspace = authenticate_key(request, snap, time.time())
    except ApiError as error:
        return render_error(error)
    model = find_model(snap, workspace, key, model_id)
    if model is None:
        return render_error(
            ApiError(
                404,
                f"The model `{model_id[:200]}` does not exist.",
                code="model_not_found",
                param="model",
            )
        )
    return json_response(model)


class TraceDetail(APIView):
    """`GET /v1/traces/{id}`: a trace of the caller's workspace (R-API-7); another
    workspace's is a 404, not a 403."""

    async def get(self, request: Request, trace_id: str) -> HttpResponseBase:
        snap = await snapshot_knowing_key(request._request)
        try:
            _key, workspace = authenticate_key(request._request, snap, time.time())
        except ApiError as error:
            return render_error(error)
        not_found = ApiError(404, "No such trace.", code="trace_not_found", param="trace_id")
        try:
            trace_uuid = uuid.UUID(trace_id)
        except ValueError:
            return render_error(not_found)
        await request_state.flush_traces()

        def read() -> dict[str, Any] | None:
            trace = RequestTrace.objects.filter(id=trace_uuid, workspace_id=workspace.id).first()
            keys = ApiKey.objects.filter(workspace_id=workspace.id)
            return None if trace is None else trace_log.detail_json(trace, keys)

        shown = await in_db_thread(read)()
        return json_response(shown) if shown is not None else render_error(not_found)


class TraceList(APIView):
    """`GET /v1/traces`: the caller's key's own traces, newest first, with the request
    log's filters and cursor (audit/trace_log.py); the management API lists a workspace's."""

    async def get(self, request: Request) -> HttpResponseBase:
        snap = await snapshot_knowing_key(request._request)
        try:
            key, workspace = authenticate_key(request._request, snap, time.time())
            query = trace_log.parse_query(request._request.GET, allow_key=False)
        except ApiError as error:
            return render_error(error)
        except trace_log.BadQuery as error:
            return render_error(invalid(str(error), param=error.param))
        await request_state.flush_traces()

        def read() -> dict[str, Any]:
            mine = RequestTrace.objects.filter(workspace_id=workspace.id, api_key_id=key.pk)
            return trace_log.list_page(mine, ApiKey.objects.filter(id=key.pk), query)

        return json_response(await in_db_thread(read)())


trace_list = TraceList.as_view()
trace_detail = TraceDetail.as_view()


__all__ = ["chat_completions", "embeddings", "models", "responses", "trace_detail", "trace_list"]
