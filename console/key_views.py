"""API keys in the console (SPEC R-KEY-1, R-MGT-1): the list with each key's settings,
create (the secret shown once, on the page that created it, and nowhere after), edit (name,
expiry, allowed models, preset, routes: `presets.preset_services.update_key`, as the
management API's PATCH), revoke.

Writes go through the services the management API and `manage.py` use
(workspaces/services.py: atomic, audited), after the one predicate says `edit`: a viewer
sees no button, and a viewer's POST is refused all the same (403)."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.contrib.auth.decorators import login_required
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from audit.models import RequestTrace
from console.access import Access, access
from console.workspace_config import comma_list
from presets.models import KeySettings, Preset, Route
from presets.preset_services import update_key
from workspaces.models import ApiKey
from workspaces.permissions import Action
from workspaces.services import (
    DuplicateKeyName,
    InvalidName,
    KeyRevoked,
    create_api_key,
    revoke_api_key,
)


def _page(request: HttpRequest, seen: Access, **extra: object) -> HttpResponse:
    # "Last used": the newest trace of each key, one probe of the (workspace, key, time)
    # index per key inside the one query — the gateway writes nothing per request for it.
    newest = RequestTrace.objects.filter(workspace=seen.workspace, api_key=OuterRef("pk"))
    last_used = Subquery(newest.order_by("-created_at").values("created_at")[:1])
    keys = list(
        ApiKey.objects.filter(workspace=seen.workspace)
        .annotate(last_used=last_used)
        .order_by("-created_at")[:500]
    )
    settings = {
        s.name: s
        for s in KeySettings.objects.filter(workspace=seen.workspace).select_related("preset")
    }
    now = timezone.now()
    rows = [{"key": k, "status": k.status(now), "settings": settings.get(k.name)} for k in keys]
    context = {"access": seen, "section": "keys", "rows": rows, **extra}
    status = 400 if extra.get("problem") else 200
    return render(request, "console/keys.html", context, status=status)


@login_required
def keys(request: HttpRequest, ws: str) -> HttpResponse:
    return _page(request, access(request.user, ws))


def _expiry(text: str) -> datetime | None:
    """`YYYY-MM-DD` as midnight UTC of that day; ValueError with the page's message."""
    if not text.strip():
        return None
    try:
        expires_at = datetime.combine(datetime.fromisoformat(text.strip()).date(), time(), UTC)
    except ValueError:
        raise ValueError("The expiry must be a date (YYYY-MM-DD).") from None
    if expires_at <= timezone.now():
        raise ValueError("The expiry must be in the future.")
    return expires_at


@login_required
@require_POST
def create_key(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    name = request.POST.get("name", "").strip() or None
    try:
        expires_at = _expiry(request.POST.get("expires_on", ""))
    except ValueError as error:
        return _page(request, seen, problem=str(error))
    try:
        created = create_api_key(
            seen.workspace, name=name, actor=request.user.get_username(), expires_at=expires_at
        )
    except (DuplicateKeyName, InvalidName) as error:
        return _page(request, seen, problem=str(error))
    # The secret is in this response only: not in the session, a message or a log.
    response = _page(request, seen, created=created)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke_key(request: HttpRequest, ws: str, key_id: int) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    key = get_object_or_404(ApiKey, workspace=seen.workspace, pk=key_id)
    revoke_api_key(key, actor=request.user.get_username())
    return redirect("console:keys", ws=seen.workspace.slug)


def _edit_page(
    request: HttpRequest, seen: Access, key: ApiKey, form: dict[str, str], problem: str = ""
) -> HttpResponse:
    context = {
        "access": seen,
        "section": "keys",
        "key": key,
        "form": form,
        "problem": problem,
        "presets": Preset.objects.filter(workspace=seen.workspace)
        .order_by("slug")
        .values_list("slug", flat=True),
        "routes": Route.objects.filter(workspace=seen.workspace)
        .order_by("slug")
        .values_list("slug", flat=True),
    }
    return render(request, "console/key_edit.html", context, status=400 if problem else 200)


@login_required
def edit_key(request: HttpRequest, ws: str, key_id: int) -> HttpResponse:
    """The key's form (GET), or its changes saved (POST, `edit`)."""
    seen = access(request.user, ws)
    key = get_object_or_404(ApiKey, workspace=seen.workspace, pk=key_id)
    settings = KeySettings.objects.filter(workspace=seen.workspace, name=key.name).first()
    if request.method != "POST":
        form = {
            "name": key.name,
            "expires_on": key.expires_at.date().isoformat() if key.expires_at else "",
            "allowed_models": ", ".join(settings.allowed_models) if settings else "",
            "preset": settings.preset.slug if settings and settings.preset else "",
            "routes": ", ".join(settings.routes) if settings else "",
        }
        return _edit_page(request, seen, key, form)
    seen.require(Action.EDIT)
    form = {
        name: request.POST.get(name, "")
        for name in ("name", "expires_on", "allowed_models", "preset", "routes")
    }
    try:
        changes = {"name": form["name"].strip(), "expires_at": _expiry(form["expires_on"])}
        settings_changes = {
            "allowed_models": comma_list(form["allowed_models"]),
            "preset": form["preset"] or None,
            "routes": comma_list(form["routes"]),
        }
        update_key(key, changes, settings_changes, actor=request.user.get_username())
    except (ValueError, KeyRevoked) as error:  # InvalidName, DuplicateKeyName, Settings*
        return _edit_page(request, seen, key, form, problem=str(error))
    return redirect("console:keys", ws=seen.workspace.slug)
