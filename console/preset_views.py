"""Presets in the console (SPEC R-PRE-1): the workspace's presets with the keys that use
them, and a form for each (and one for a new preset) saved through `apply`, as the
policy is (console/policy_views.py): the config file's validator and its messages, one
transaction, audited, a new configuration version for every replica. A preset is never
deleted here: a key may depend on it (apply refuses to delete one in use, and the file is
where that is decided)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.access import Access, access
from console.workspace_config import comma_list, problems, section
from declarative.fields import ConfigError
from management_api.config_apply import apply_config
from presets.models import KeySettings, Preset
from workspaces.permissions import Action

LISTS = ("allowed_models", "provider_allow", "provider_ignore")


def _rows(seen: Access) -> list[dict[str, Any]]:
    users: dict[int, list[str]] = {}
    settings = KeySettings.objects.filter(workspace=seen.workspace, preset__isnull=False)
    for name, preset_id in settings.values_list("name", "preset_id"):
        users.setdefault(preset_id, []).append(name)
    return [
        {
            "preset": p,
            "keys": sorted(users.get(p.pk, [])),
            "form": {
                **{n: ", ".join(getattr(p, n)) for n in LISTS},
                "default_prompt": p.default_prompt,
                "default_params": json.dumps(p.default_params, indent=1)
                if p.default_params
                else "",
            },
        }
        for p in Preset.objects.filter(workspace=seen.workspace).order_by("slug")
    ]


def _page(
    request: HttpRequest,
    seen: Access,
    problems: list[str],
    status: int = 200,
    draft: dict[str, str] | None = None,
) -> HttpResponse:
    context = {
        "access": seen,
        "section": "presets",
        "rows": _rows(seen),
        "problems": problems,
        "draft": draft or {},
    }
    return render(request, "console/presets.html", context, status=status)


@login_required
def presets(request: HttpRequest, ws: str) -> HttpResponse:
    return _page(request, access(request.user, ws), [])


def _entry(post: Any) -> dict[str, Any]:
    """A posted preset form as the `presets:` entry of a config file."""
    entry: dict[str, Any] = {"slug": post.get("slug", "").strip()}
    for name in LISTS:
        entry[name] = comma_list(post.get(name, ""))
    entry["default_prompt"] = post.get("default_prompt", "")
    params = post.get("default_params", "").strip()
    if params:
        try:
            entry["default_params"] = json.loads(params)
        except json.JSONDecodeError as error:
            raise ConfigError([f"default_params: not JSON ({error.msg})"]) from None
    else:
        entry["default_params"] = {}
    return entry


@login_required
@require_POST
def save_preset(request: HttpRequest, ws: str) -> HttpResponse:
    seen = access(request.user, ws)
    seen.require(Action.EDIT)
    workspace = seen.workspace
    try:
        entry = _entry(request.POST)
        report = apply_config(
            section(workspace, "presets", [entry]),
            actor=request.user.get_username(),
            target="console:presets",
        )
    except ConfigError as error:
        found = problems(error, "workspaces[0].presets[0].")
        draft = {
            name: request.POST.get(name, "")
            for name in (*LISTS, "slug", "default_prompt", "default_params")
        }
        return _page(request, seen, found, status=400, draft=draft)
    shown = entry["slug"]
    messages.success(request, f"Preset {shown} saved." if report.changed else "Nothing changed.")
    return redirect("console:presets", ws=workspace.slug)
