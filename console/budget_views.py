"""Budgets & limits in the console (SPEC R-LIM-1, R-LIM-2, R-POL-2, D-28, D-30): the page
(console/budget_status.py says what it shows and where spending comes from), and its
three writes — set or replace a budget, delete one, set a scope's rate limits.

Each write asks the one predicate for `edit` first, then validates the form with the
management API's serializers (management_api/budget_serializers.py: `apply`'s rules), so a
problem reads exactly as the API's 400 says it; a bad form is a 400 re-rendering the page
with that message and writes nothing. Valid values go through
`budgets.services` (atomic, audited) and the page redirects with a message: the
shape console/form_writes.py gives every console form write."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from budgets import services as budget_services
from budgets.models import Budget
from console.access import Access, access
from console.budget_status import budget_page
from console.form_writes import validated, write_form
from console.workspace_config import comma_list, form_number
from declarative.budgets import BUDGET_PERIODS
from management_api.budget_serializers import BudgetBodySerializer, RateLimitBodySerializer
from workspaces.models import ApiKey
from workspaces.permissions import Action

LIMIT_FIELDS = budget_services.LIMIT_FIELDS
BUDGET_FORM = ("key_name", "period", "usd", "alerts")


def _page(
    request: HttpRequest,
    seen: Access,
    *,
    problems: tuple[str, ...] = (),
    forms: Mapping[str, Mapping[str, str]] | None = None,
) -> HttpResponse:
    names = (
        ApiKey.objects.active()
        .filter(workspace=seen.workspace)
        .order_by("name")
        .values_list("name", flat=True)
        .distinct()[:500]
    )
    context = {
        "access": seen,
        "section": "budgets",
        "page": budget_page(seen.workspace, time.time()),
        "periods": BUDGET_PERIODS,
        "key_names": list(names),
        "problems": problems,
        "budget_form": {},
        "limits_form": {},
        **(forms or {}),
    }
    return render(request, "console/budgets.html", context, status=400 if problems else 200)


@login_required
def budgets(request: HttpRequest, ws: str) -> HttpResponse:
    return _page(request, access(request.user, ws))


def _budget_body(post: QueryDict) -> dict[str, Any]:
    """The form as `POST budgets` takes it; a blank field is left out (`is required`)."""
    body: dict[str, Any] = {"alerts": [form_number(a) for a in comma_list(post.get("alerts", ""))]}
    for field in ("key_name", "period", "usd"):
        if post.get(field, "") != "":
            body[field] = form_number(post[field]) if field == "usd" else post[field]
    return body


def _limits_body(post: QueryDict) -> dict[str, Any]:
    """The form as `PUT limits` takes it: a blank limit is null (no limit of that kind)."""
    body: dict[str, Any] = {
        f: form_number(post[f]) if post.get(f, "").strip() else None for f in LIMIT_FIELDS
    }
    if post.get("key_name", "") != "":
        body["key_name"] = post["key_name"]
    return body


def _scope(key_name: str) -> str:
    return f"key {key_name}" if key_name else "the workspace"


def _typed(post: QueryDict, fields: tuple[str, ...]) -> dict[str, str]:
    return {field: post.get(field, "") for field in fields}


def _set_budget(request: HttpRequest, seen: Access) -> str:
    body = validated(BudgetBodySerializer(data=_budget_body(request.POST)))
    key_name, values = body["key_name"], body["budget"]
    saved = budget_services.set_budget(
        seen.workspace, key_name, values, actor=request.user.get_username()
    )
    done = "created" if saved.created else "saved"
    return f"The {values.period} budget of {_scope(key_name)} {done}."


def _budget_form_again(request: HttpRequest, seen: Access, problems: Sequence[str]) -> HttpResponse:
    typed = {"budget_form": _typed(request.POST, BUDGET_FORM)}
    return _page(request, seen, problems=tuple(problems), forms=typed)


@login_required
@require_POST
def save_budget(request: HttpRequest, ws: str) -> HttpResponse:
    """Create or replace the budget of (key name, period)."""
    return write_form(request, ws, _set_budget, again=_budget_form_again, then="console:budgets")


@login_required
@require_POST
def delete_budget(request: HttpRequest, ws: str, budget_id: int) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    found = get_object_or_404(Budget, pk=budget_id, workspace=seen.workspace)
    budget_services.delete_budget(found, actor=request.user.get_username())
    messages.success(request, f"The {found.period} budget of {_scope(found.key_name)} deleted.")
    return redirect("console:budgets", ws=seen.workspace.slug)


def _set_limits(request: HttpRequest, seen: Access) -> str:
    body = validated(RateLimitBodySerializer(data=_limits_body(request.POST)))
    key_name, values = body["key_name"], body["limits"]
    budget_services.set_rate_limits(
        seen.workspace, key_name, values, actor=request.user.get_username()
    )
    done = "removed" if values.is_empty else "saved"
    return f"The rate limits of {_scope(key_name)} {done}."


def _limits_form_again(request: HttpRequest, seen: Access, problems: Sequence[str]) -> HttpResponse:
    typed = {"limits_form": _typed(request.POST, ("key_name", *LIMIT_FIELDS))}
    return _page(request, seen, problems=tuple(problems), forms=typed)


@login_required
@require_POST
def save_limits(request: HttpRequest, ws: str) -> HttpResponse:
    """Replace one scope's rate limits whole; all blank removes them."""
    return write_form(request, ws, _set_limits, again=_limits_form_again, then="console:budgets")
