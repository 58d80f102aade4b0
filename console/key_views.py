"""API keys in the console (SPEC R-KEY-1, R-MGT-1): the list with each key's settings,
create (the secret shown once, on the page that created it, and nowhere after), revoke.

Writes go through the services the management API and `manage.py` use
(workspaces/services.py: atomic, audited), after the one predicate says `edit`: a viewer
sees no button, and a viewer's POST is refused all the same (403)."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from console.access import Access, access
from presets.models import KeySettings
from workspaces.models import ApiKey
from workspaces.permissions import Action
from workspaces.services import (
    DuplicateKeyName,
    InvalidName,
    create_api_key,
    revoke_api_key,
)


def _page(request: HttpRequest, seen: Access, **extra: object) -> HttpResponse:
    keys = list(ApiKey.objects.filter(workspace=seen.workspace).order_by("-created_at")[:500])
    settings = {s.name: s for s in KeySettings.objects.filter(workspace=seen.workspace)
                .select_related("preset")}  # fmt: skip
    now = timezone.now()
    rows = [{"key": k, "status": k.status(now), "settings": settings.get(k.name)} for k in keys]
    context = {"access": seen, "section": "keys", "rows": rows, **extra}
    status = 400 if extra.get("problem") else 200
    return render(request, "console/keys.html", context, status=status)


@login_required
def keys(request: HttpRequest, ws: str) -> HttpResponse:
    return _page(request, access(request.user, ws))


@login_required
@require_POST
def create_key(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    name = request.POST.get("name", "").strip() or None
    expires = request.POST.get("expires_on", "").strip()
    try:
        expires_at = datetime.combine(datetime.fromisoformat(expires).date(), time(), UTC) \
            if expires else None  # fmt: skip
    except ValueError:
        return _page(request, seen, problem="The expiry must be a date (YYYY-MM-DD).")
    if expires_at is not None and expires_at <= timezone.now():
        return _page(request, seen, problem="The expiry must be in the future.")
    try:
        created = create_api_key(seen.workspace, name=name, actor=request.user.get_username(),
                                 expires_at=expires_at)  # fmt: skip
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
