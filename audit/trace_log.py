"""The request log (SPEC R-OBS-1, R-API-7, D-31): which traces a query string asks for, and
how a trace is shown — a row of the list (with its attempt chain, so a list needs no
detail fetch per row) and the detail (the one decision record, R-BEY-1).

Served by the management API (`GET /api/v1/workspaces/{ws}/traces`, management_api/trace_views.py)
and by `/v1` for a key's own traces (gateway/api/views.py); both read through here, so
the two cannot filter or show differently. Every filter has an index in its keyset order
(audit/models.py), pages are keyset cursors (audit/cursor.py), and nothing counts rows."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from audit.cursor import Cursor, page, parse_limit
from audit.models import RequestTrace
from workspaces.keys import KEY_PREFIX
from workspaces.models import ApiKey

# query parameter -> the column it matches exactly (text as given)
TEXT_FILTERS = {
    "model": "model",
    "requested_model": "requested_model",
    "provider": "provider",
    "endpoint": "endpoint",
    "error_code": "error_code",
    "tier": "tier",
    "route": "route",
    "session_id": "session_id",
    "request_id": "request_id",
    "operation": "operation",
}
OTHER_FILTERS = ("since", "until", "status", "route_version", "trace_id", "key")
PAGING = ("limit", "cursor")
# The list never loads the decision record: it is most of a row's bytes.
LIST_DEFERRED = ("decision",)


class BadQuery(ValueError):
    """A query parameter the caller got wrong; `param` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class TraceQuery:
    filters: Q
    key_names: tuple[str, ...]  # `key=`: names or prefixes, resolved by the caller
    cursor: Cursor | None
    limit: int


def parse_query(params: Mapping[str, str], *, allow_key: bool) -> TraceQuery:
    """The traces `params` ask for. `allow_key`: the management API filters by key (a
    key's own list is that key's already). Unknown parameters are refused: a misspelt
    filter must not quietly return everything."""
    known = {*TEXT_FILTERS, *OTHER_FILTERS, *PAGING} - (set() if allow_key else {"key"})
    for name in params:
        if name not in known:
            raise BadQuery(
                name, f"Unknown parameter `{name}`; filters: {', '.join(sorted(known))}."
            )
    q = Q()
    for name, column in TEXT_FILTERS.items():
        if name in params:
            q &= Q(**{column: params[name]})
    if "since" in params:
        q &= Q(created_at__gte=_time(params, "since"))
    if "until" in params:
        q &= Q(created_at__lt=_time(params, "until"))
    if "status" in params:
        q &= Q(status_code=_whole(params, "status", high=999))
    if "route_version" in params:
        q &= Q(route_version=_whole(params, "route_version", high=2**31 - 1))
    if "trace_id" in params:
        q &= Q(id=_uuid(params, "trace_id"))
    keys = tuple(k.strip() for k in params.get("key", "").split(",") if k.strip())
    try:
        cursor = Cursor.decode(params["cursor"]) if params.get("cursor") else None
    except ValueError as error:
        raise BadQuery("cursor", str(error)) from None
    try:
        limit = parse_limit(params.get("limit"))
    except ValueError as error:
        raise BadQuery("limit", str(error)) from None
    return TraceQuery(q, keys, cursor, limit)


def list_page(
    traces: QuerySet[RequestTrace], keys: QuerySet[ApiKey], query: TraceQuery
) -> dict[str, Any]:
    """One page of `traces` as the API's list. `traces` is scoped already (a workspace's,
    or one key's); `keys` are the keys its rows may name (the workspace's)."""
    if query.key_names:
        lookups = [name.removeprefix(KEY_PREFIX) for name in query.key_names]
        chosen = keys.filter(Q(name__in=query.key_names) | Q(lookup_id__in=lookups))
        traces = traces.filter(api_key_id__in=chosen.values("id"))
    found, next_cursor = page(
        traces.filter(query.filters).defer(*LIST_DEFERRED), query.cursor, query.limit
    )
    named = key_names(keys, {t.api_key_id for t in found if t.api_key_id is not None})
    data = [row_json(t, named.get(t.api_key_id or 0)) for t in found]
    return {"object": "list", "data": data, "next_cursor": next_cursor}


def key_names(keys: QuerySet[ApiKey], ids: set[int]) -> dict[int, dict[str, str]]:
    """The prefix and name of each key in `ids`: one query for a page, not one per row."""
    rows = keys.filter(id__in=ids).values_list("id", "lookup_id", "name") if ids else []
    return {pk: {"prefix": f"{KEY_PREFIX}{lookup}", "name": name} for pk, lookup, name in rows}


def row_json(trace: RequestTrace, key: dict[str, str] | None) -> dict[str, Any]:
    """A trace as a row of the list: everything but the decision record. `key`: the
    prefix and name of its API key (None once the key is deleted)."""
    usage = trace.usage or {}
    return {
        "id": str(trace.id),
        "object": "switchyard.trace",
        "request_id": trace.request_id,
        "created_at": trace.created_at.isoformat(),
        "operation": trace.operation,
        "requested_model": trace.requested_model,
        "model": trace.model,
        "provider": trace.provider,
        "endpoint": trace.endpoint,
        "stream": trace.stream,
        "status_code": trace.status_code,
        "error_code": trace.error_code,
        "tier": trace.tier,
        "route": trace.route,
        "route_version": trace.route_version,
        "route_node": trace.route_node,
        "session_id": trace.session_id,
        "api_key": key,
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cost_usd": trace.cost_micros / 1_000_000,
        "latency_ms": trace.latency_ms,
        "ttfb_ms": trace.ttfb_ms,
        "purpose": trace.purpose,
        "parent_id": str(trace.parent_id) if trace.parent_id else None,
        "attempts": trace.attempts,
    }


def detail_json(trace: RequestTrace, keys: QuerySet[ApiKey]) -> dict[str, Any]:
    """A trace whole: its row, the usage as the upstream told it, and the decision record."""
    key = key_names(keys, {trace.api_key_id} if trace.api_key_id is not None else set())
    row = row_json(trace, key.get(trace.api_key_id or 0))
    return {**row, "usage": trace.usage, "decision": trace.decision}


def _time(params: Mapping[str, str], name: str) -> datetime:
    text = params[name].replace("Z", "+00:00").replace(" ", "+")  # `+` arrives as a space
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise BadQuery(
            name, f"`{name}` must be an ISO 8601 time, e.g. 2026-12-01T10:00:00Z."
        ) from None
    if value.tzinfo is None:
        raise BadQuery(name, f"`{name}` needs a time zone (e.g. a trailing Z for UTC).")
    return value


def _whole(params: Mapping[str, str], name: str, *, high: int) -> int:
    text = params[name]
    if not text.isdigit() or int(text) > high:
        raise BadQuery(name, f"`{name}` must be a whole number from 0 to {high}.")
    return int(text)


def _uuid(params: Mapping[str, str], name: str) -> uuid.UUID:
    try:
        return uuid.UUID(params[name])
    except ValueError:
        raise BadQuery(name, f"`{name}` must be a trace id (a UUID).") from None
