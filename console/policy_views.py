"""The policy editor (SPEC R-POL-1, R-MGT-1): every policy field with its help, a preview
of what it leaves of the catalog while it is edited, saved through `apply`.

Saving writes the workspace's `policy:` section with `apply_config` — the service a
config file and `manage.py apply` go through: one transaction, checked by the same
validator (its messages, with their paths, are the page's), audited with every changed
field's before and after, and a new configuration version, which every replica's
snapshot poll picks up (SWITCHYARD_SNAPSHOT_POLL_S, 1 s). The preview runs the same
validator and the engine's filter on the form as it stands, and writes nothing."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.access import Access, access
from console.policy_form import FIELDS, MODES, RESIDENCY, document_of, form_values
from console.policy_preview import ModelPreview, preview
from console.workspace_config import problems, section
from declarative.fields import ConfigError
from gateway.state.snapshot_load import catalog_endpoints, policy_view
from management_api.config_apply import apply_config, parse
from management_api.config_export import policy_document
from workspaces.models import Policy
from workspaces.permissions import Action

PREFIX = "workspaces[0].policy."  # the validator's paths, as the form names the fields


def _stored(seen: Access) -> Policy:
    return Policy.objects.filter(workspace=seen.workspace).first() or Policy()


def _posted(request: HttpRequest) -> dict[str, Any]:
    return document_of(lambda name: request.POST.get(name, ""), request.POST.getlist)


def _page(
    request: HttpRequest,
    seen: Access,
    values: dict[str, Any],
    models: list[ModelPreview],
    problems: list[str],
    status: int = 200,
) -> HttpResponse:
    fields = [(field, values.get(field.name, "")) for field in FIELDS]
    context = {
        "access": seen,
        "section": "policy",
        "values": values,
        "fields": fields,
        "residency": RESIDENCY,
        "modes": MODES,
        "models": models,
        "problems": problems,
    }
    return render(request, "console/policy.html", context, status=status)


@login_required
def policy(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    stored = _stored(seen)
    values = form_values(policy_document(stored))
    return _page(request, seen, values, preview(policy_view(stored), catalog_endpoints()), [])


@login_required
@require_POST
def save_policy(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    doc = _posted(request)
    try:
        report = apply_config(
            section(seen.workspace, "policy", doc),
            actor=request.user.get_username(),
            target="console:policy",
        )
    except ConfigError as error:
        models = preview(policy_view(_stored(seen)), catalog_endpoints())
        return _page(request, seen, form_values(doc), models, problems(error, PREFIX), status=400)
    messages.success(request, "Policy saved." if report.changed else "Nothing changed.")
    return redirect("console:policy", ws=seen.workspace.slug)


@login_required
@require_POST
def preview_policy(request: HttpRequest, ws: str) -> HttpResponse:
    """The preview of the form as it stands (htmx, on every change). Reads only."""
    seen = access(request.user, ws)
    try:
        spec = (
            parse(section(seen.workspace, "policy", _posted(request)), environ={})
            .workspaces[0]
            .policy
        )
    except ConfigError as error:
        return render(
            request, "console/_policy_preview.html", {"problems": problems(error, PREFIX)}
        )
    unsaved = Policy(**{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()})
    models = preview(policy_view(unsaved), catalog_endpoints())
    return render(request, "console/_policy_preview.html", {"models": models, "problems": []})
