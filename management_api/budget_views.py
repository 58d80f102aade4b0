"""The management API's budgets and rate limits (SPEC R-MGT-1, R-LIM-1, R-LIM-2, D-28),
under `/api/v1/workspaces/{ws}/`:

    GET    budgets        every budget with its current period's spending (read)
    POST   budgets        create or replace the budget of (key_name, period) (edit)
    DELETE budgets/{id}   delete one (edit) → 204
    GET    limits         the workspace's and each key name's rate limits (read)
    PUT    limits         set one scope's limits; all null removes them (edit)

A key's own budget and limits are also fields of the keys resource (management_api/preset_views.py).

Spending is read from this process's budget store — the one the gateway admits with
(`admission_state.stores()`: Redis, the database, or this process on SQLite) — for each
budget's counter of the period holding now. A store that cannot answer is a 503
`budget_store_unavailable`, never zeros. Writes go through `budgets.services`
and never touch the store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from budgets import services as budget_services
from budgets.models import Budget, RateLimit
from budgets.rules.budgets import counter_name, key_scope, workspace_scope
from budgets.rules.holds import CounterState
from management_api import runtime
from management_api.base import WorkspaceScopedAPIView, WorkspaceScopedViewSet, invalid
from management_api.budget_serializers import (
    PERIOD_ORDER,
    BudgetBodySerializer,
    BudgetSerializer,
    BudgetStatusSerializer,
    RateLimitBodySerializer,
    RateLimitSerializer,
    RateLimitStatusSerializer,
    budget_shown,
    is_limiting,
    limits_shown,
    micros_as_usd,
    policy_budget_shown,
)
from management_api.schema import ErrorSerializer
from routing.engine.routes.periods import period_bounds
from workspaces.models import Policy, Workspace

UNAVAILABLE = OpenApiResponse(
    ErrorSerializer, description="The budget store cannot answer (code `budget_store_unavailable`)."
)


def _body(request: Request, shape: str) -> Mapping[str, Any]:
    if not isinstance(request.data, Mapping):
        raise invalid(f"Expected a JSON object: {shape}.")
    return request.data


def configured_budgets(workspace: Workspace) -> list[dict[str, Any]]:
    """The workspace's budgets as `BudgetSerializer` shows them, the policy's
    `daily_budget` among them (D-28: shorthand for a daily workspace budget); the
    workspace's first, then by key name, period, and a row before the policy's."""
    rows = [budget_shown(budget) for budget in Budget.objects.filter(workspace=workspace)]
    policy = Policy.objects.filter(workspace=workspace).first()
    if policy is not None and policy.daily_budget_micros is not None:
        rows.append(policy_budget_shown(policy.daily_budget_micros))

    def order(row: dict[str, Any]) -> tuple[str, int, bool]:
        return row["key_name"], PERIOD_ORDER.get(row["period"], 99), row["source"] == "policy"

    return sorted(rows, key=order)


def _scope(workspace: Workspace, key_name: str) -> str:
    return key_scope(workspace.pk, key_name) if key_name else workspace_scope(workspace.pk)


def with_spending(
    workspace: Workspace, rows: list[dict[str, Any]], now: float
) -> list[dict[str, Any]]:
    """Each budget with its counter's state in the period holding `now`. No budget, no
    store read (as a request without one never touches the store)."""
    for row in rows:
        row["counter"] = counter_name(_scope(workspace, row["key_name"]), row["period"], now)
    states = runtime.read_counters(sorted({row["counter"] for row in rows})) if rows else {}
    for row in rows:
        state = states.get(row["counter"], CounterState())
        start, end = period_bounds(row["period"], now)
        cap = row["limit_micros"]
        row.update(
            spent_usd=micros_as_usd(state.spent_micros),
            reserved_usd=micros_as_usd(state.reserved_micros),
            remaining_usd=micros_as_usd(max(cap - state.spent_micros - state.reserved_micros, 0)),
            requests=state.requests,
            period_start=datetime.fromtimestamp(start, tz=UTC),
            resets_at=datetime.fromtimestamp(end, tz=UTC),
        )
    return rows


@extend_schema_view(
    list=extend_schema(
        summary="Every budget of the workspace with its current period's spending",
        responses={200: BudgetStatusSerializer(many=True), 503: UNAVAILABLE},
    ),
    create=extend_schema(
        summary="Create or replace the budget of a scope and period",
        description="201 with a new budget, 200 with the one it replaced. Validated as "
        "`apply` validates `budgets:`; every problem is listed, and nothing is written.",
        request=BudgetBodySerializer,
        responses={201: BudgetSerializer, 200: BudgetSerializer},
    ),
    destroy=extend_schema(
        summary="Delete a budget", responses={204: OpenApiResponse(description="Deleted")}
    ),
)
class BudgetViewSet(WorkspaceScopedViewSet):
    """The workspace's budgets (R-LIM-2, D-28): spending caps per UTC calendar period, of
    the workspace or of a key name, with alert thresholds. A request is refused (402
    `budget_exceeded`) when its worst case does not fit. Changes reach every gateway
    within one snapshot poll."""

    queryset = Budget.objects.all()
    serializer_class = BudgetSerializer
    lookup_url_kwarg = "id"
    not_found_message = "No budget {id!r} in workspace {ws!r}."
    not_found_code = "budget_not_found"

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        rows = with_spending(self.workspace, configured_budgets(self.workspace), time.time())
        return Response(BudgetStatusSerializer(rows, many=True).data)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = BudgetBodySerializer(data=_body(request, "{key_name?, period, usd, alerts?}"))
        body.is_valid(raise_exception=True)
        data = body.validated_data
        saved = budget_services.set_budget(
            self.workspace, data["key_name"], data["budget"], actor=self.actor
        )
        answer = status.HTTP_201_CREATED if saved.created else status.HTTP_200_OK
        return Response(BudgetSerializer(budget_shown(saved.budget)).data, status=answer)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        budget_services.delete_budget(self.get_object(), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RateLimitView(WorkspaceScopedAPIView):
    """The workspace's rate limits (R-LIM-1), its own (`key_name` "") and each key
    name's: requests and tokens per minute, requests in flight. A request over one is
    refused (429 `rate_limited`). Changes reach every gateway within one snapshot poll."""

    @extend_schema(
        summary="The rate limits of the workspace and of each key name, with their use now",
        responses={200: RateLimitStatusSerializer(many=True)},
    )
    def get(self, request: Request, ws: str) -> Response:
        rows = RateLimit.objects.filter(workspace=self.workspace).order_by("key_name")
        limiting = [row for row in rows if is_limiting(row)]
        uses = runtime.read_limit_usage(limiting, time.time())
        shown = [
            {
                **limits_shown(row.key_name, row),
                "in_use": None
                if uses is None
                else {
                    kind: {"used": u.used, "remaining": u.remaining, "reset_s": u.reset_s}
                    for kind, u in uses.get(row.key_name, {}).items()
                },
            }
            for row in limiting
        ]
        return Response(RateLimitStatusSerializer(shown, many=True).data)

    @extend_schema(
        summary="Set the rate limits of one scope; all null removes them",
        request=RateLimitBodySerializer,
        responses={200: RateLimitSerializer},
    )
    def put(self, request: Request, ws: str) -> Response:
        shape = "{key_name?, requests_per_minute?, tokens_per_minute?, concurrent?}"
        body = RateLimitBodySerializer(data=_body(request, shape))
        body.is_valid(raise_exception=True)
        key_name, values = body.validated_data["key_name"], body.validated_data["limits"]
        row = budget_services.set_rate_limits(self.workspace, key_name, values, actor=self.actor)
        return Response(RateLimitSerializer(limits_shown(key_name, row)).data)
