"""BYOK credentials in the console (SPEC R-BYOK-1): the workspace's own provider keys —
add, replace, restrict to models and to API keys, the managed-fallback switch, delete.

A credential's secret is write-only: the page never has it (only "stored, updated …"),
the form's field is a password field left empty on every render, and an empty field on
a replace keeps the stored key. Writes go through workspaces/credential_services.py (sealed with
AES-256-GCM bound to workspace and provider, atomic, audited with `[secret]` for the
secret), after the one predicate says `edit` (console/form_writes.py).

Each credential's health in this workspace (SPEC R-BEY-7) comes from where the management
API's `health` field and `GET /health` read it (`request_state.credentials_health`):
whether it cools down and until when, the failures of its key this worker saw in the last
five minutes, and that window's live numbers of the attempts with its key — requests,
error rate, p50 latency — rolled up over every worker and replica (R-OBS-2)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from console.access import Access, access
from console.form_writes import FormProblems, write_form
from console.workspace_config import comma_list
from gateway.state import request_state
from routing.models import Provider
from workspaces.credential_services import (
    CredentialInvalid,
    CredentialRules,
    DuplicateCredential,
    create_credential,
    delete_credential,
    replace_credential,
)
from workspaces.models import ApiKey, ProviderCredential
from workspaces.permissions import Action


def _page(request: HttpRequest, seen: Access, problems: Sequence[str] = ()) -> HttpResponse:
    """The credentials page; a 400 when it shows a form's problems."""
    credentials = (
        ProviderCredential.objects.filter(workspace=seen.workspace)
        .prefetch_related("api_keys")
        .order_by("provider_slug")
    )
    keys = list(
        ApiKey.objects.active()
        .filter(workspace=seen.workspace)
        .order_by("name")
        .values_list("lookup_id", "name")[:500]
    )
    health = request_state.credentials_health(
        seen.workspace.pk, [c.provider_slug for c in credentials], time.time()
    )
    rows = [
        {
            "credential": c,
            "models": ", ".join(c.allowed_models),
            "keys": {k.lookup_id for k in c.api_keys.all()},
            "health": _shown(health.get(c.provider_slug)),
        }
        for c in credentials
    ]
    providers = Provider.objects.order_by("slug").values_list("slug", flat=True)
    context = {
        "access": seen,
        "section": "credentials",
        "rows": rows,
        "keys": keys,
        "providers": list(providers),
        "problems": problems,
    }
    status = 400 if problems else 200
    return render(request, "console/credentials.html", context, status=status)


def _shown(health: dict[str, Any] | None) -> dict[str, Any] | None:
    """The health as the page says it: its ISO times (`…Z`) as `YYYY-MM-DD HH:MM:SS`, the
    error rate in per cent and the p50 latency in whole ms, as the Live page says them."""
    if health is None:
        return None
    shown = {
        name: value.replace("T", " ").removesuffix("Z")[:19]
        if name.endswith(("_until", "_at")) and isinstance(value, str)
        else value
        for name, value in health.items()
    }
    rate, p50 = health["error_rate"], health["latency_p50_ms"]
    shown["error_percent"] = "—" if rate is None else f"{100 * rate:.1f} %"
    shown["latency_p50"] = "—" if p50 is None else f"{round(p50)} ms"
    return shown


@login_required
def credentials(request: HttpRequest, ws: str) -> HttpResponse:
    return _page(request, access(request.user, ws))


def _rules(post: QueryDict) -> CredentialRules:
    models = tuple(comma_list(post.get("allowed_models", "")))
    return CredentialRules(
        allowed_models=models,
        api_keys=tuple(post.getlist("api_keys")),
        managed_fallback=post.get("managed_fallback") == "on",
    )


def _problems(error: Exception) -> list[str]:
    found: Any = getattr(error, "problems", None)
    if found:
        return [f"{path}: {message}" for path, message in found]
    return [str(error)]


def _store_credential(request: HttpRequest, seen: Access) -> str:
    provider, secret = request.POST.get("provider", "").strip(), request.POST.get("secret", "")
    actor = request.user.get_username()
    stored = ProviderCredential.objects.filter(
        workspace=seen.workspace, provider_slug=provider
    ).first()
    # The service validates the form (provider, secret, rules) as it writes.
    try:
        if stored is None:
            create_credential(
                seen.workspace, provider, secret=secret, rules=_rules(request.POST), actor=actor
            )
        else:
            replace_credential(
                stored, secret=secret or None, rules=_rules(request.POST), actor=actor
            )
    except (CredentialInvalid, DuplicateCredential, ValueError) as error:
        raise FormProblems(_problems(error)) from error
    return f"Credential for {provider} saved."


@login_required
@require_POST
def save_credential(request: HttpRequest, ws: str) -> HttpResponse:
    """Add a provider's credential, or replace the rules (and the key, when one is typed)
    of the one the workspace has."""
    return write_form(request, ws, _store_credential, again=_page, then="console:credentials")


@login_required
@require_POST
def remove_credential(request: HttpRequest, ws: str, provider: str) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    found = get_object_or_404(ProviderCredential, workspace=seen.workspace, provider_slug=provider)
    delete_credential(found, actor=request.user.get_username())
    messages.success(request, f"Credential for {provider} deleted: the managed key serves it.")
    return redirect("console:credentials", ws=seen.workspace.slug)
