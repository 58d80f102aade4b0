"""The explain playground (SPEC R-BEY-2, D-21): a form — key, model, a message, the
`provider` / `routing` / `residency` extras — that runs `POST /v1/routing/explain` as the
chosen key would and draws the answer with the trace page's parts.

The console holds no key's secret (only its HMAC is stored), so the explanation is served
in process for the key's lookup id (`gateway.request_path.serve.serve_as`), after this
view has checked that the person may `use` the workspace and the key is one of its own.
Explain is a dry run: no upstream call, no trace, no pin, no counter — and the message
typed here is neither stored nor logged."""

from __future__ import annotations

import json
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.access import Access, access
from console.trace_view import trace_page
from gateway.api.explain import EXPLAIN
from gateway.request_path.serve import serve_as
from workspaces.models import ApiKey
from workspaces.permissions import Action

RESIDENCY = ("", "eu-owned", "eu-hosted", "any")
FORM = ("key", "model", "message", "residency", "provider", "routing")


def _active_keys(seen: Access) -> list[tuple[str, str]]:
    keys = ApiKey.objects.active().filter(workspace=seen.workspace).order_by("name")
    return list(keys.values_list("lookup_id", "name")[:500])


def _body(form: dict[str, str]) -> dict[str, Any]:
    """The chat body the form describes; ValueError naming a field whose JSON is wrong."""
    body: dict[str, Any] = {
        "model": form["model"].strip(),
        "messages": [{"role": "user", "content": form["message"]}],
    }
    if form["residency"]:
        body["residency"] = form["residency"]
    for name in ("provider", "routing"):
        if form[name].strip():
            try:
                body[name] = json.loads(form[name])
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"`{name}` is not JSON: {error.msg} (line {error.lineno})"
                ) from None
    return body


def _explained(answer: dict[str, Any]) -> dict[str, Any]:
    """An explanation in the shape of a trace's detail, for `trace_page`."""
    order = answer.get("attempt_order") or []
    decision = {name: answer.get(name) for name in ("request", "decisions", "route", "tier")}
    return {"decision": decision, "attempts": [], "endpoint": order[0] if order else ""}


@login_required
async def explain(request: HttpRequest, ws: str) -> HttpResponse:
    seen = await sync_to_async(access)(await request.auser(), ws)
    keys = await sync_to_async(_active_keys)(seen)
    form = {name: request.POST.get(name, "") for name in FORM}
    context: dict[str, Any] = {
        "access": seen,
        "section": "explain",
        "keys": keys,
        "residencies": RESIDENCY,
        "form": form,
    }
    status = 200
    if request.method == "POST":
        seen.require(Action.USE)
        if form["key"] not in {lookup for lookup, _name in keys}:
            context["problem"] = "Choose one of the workspace's active keys."
            return await sync_to_async(render)(request, "console/explain.html", context, status=400)
        try:
            answer = await serve_as(request, EXPLAIN, seen.workspace.pk, form["key"], _body(form))
            explained = orjson.loads(answer.content)  # type: ignore[attr-defined]
        except ValueError as error:
            context["problem"], status = str(error), 400
        else:
            if answer.status_code == 200:
                context["page"] = trace_page(_explained(explained))
                context["order"] = explained.get("attempt_order") or []
                context["chosen_label"] = "first choice"
            else:
                context["problem"] = explained.get("error", {}).get("message", "refused")
                context["refused_status"] = status = answer.status_code
    # Rendering reads the session's user (the base template): a query, so in a thread.
    if request.headers.get("HX-Request") == "true":  # htmx swaps 2xx only
        return await sync_to_async(render)(request, "console/_explanation.html", context)
    return await sync_to_async(render)(request, "console/explain.html", context, status=status)
