"""Tenancy over the whole management API (SPEC R-MGT-1, D-30): every endpoint under
`/api/v1/workspaces/{ws}/`, found by walking the URL patterns (so a new one is covered
without a word here), answers a token of another workspace with a 404 that names nothing
of this one, and refuses every write of a viewer token with a 403 before anything runs."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import URLPattern, URLResolver

from gateway.urls import management_routes
from tests.management_api.clients import client_as
from workspaces.models import Workspace
from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db
SAMPLES = {"int": "1", "uuid": str(uuid.UUID(int=1)), "slug": "x", "str": "x", "path": "x"}


def _routes(patterns: list, prefix: str = "") -> list[str]:  # type: ignore[type-arg]
    found = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found += _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            found.append(route)
    return found


def _regex_sample(group: re.Match[str]) -> str:
    """A value the group's own pattern matches: a router's `(?P<n>[0-9]+)` takes "1"."""
    return next(v for v in SAMPLES.values() if re.fullmatch(group.group(1), v))


def _url(route: str, ws: str) -> str:
    """A concrete path for `route`: `ws` for the workspace, a sample for anything else."""
    route = re.sub(r"(?<!\[)\^|\$", "", route).replace("\\.", ".")  # anchors, not [^…]
    route = re.sub(r"\.?\(\?P<format>[^)]*\)/?", "", route)  # DRF's format suffix
    route = re.sub(r"\(\?P<\w+>([^)]*)\)", _regex_sample, route)  # a router's regex groups

    def sample(match: re.Match[str]) -> str:
        return ws if match.group(2) == "ws" else SAMPLES[match.group(1) or "str"]

    path = re.sub(r"<(?:(\w+):)?(\w+)>", sample, route)
    return "/" + path


@pytest.fixture
def urls() -> list[str]:
    found = sorted({_url(route, "acme") for route in _routes(management_routes)})
    assert len(found) >= 15, found  # keys, presets, routes…, budgets, traces, audit at least
    return found


def test_r_mgt_1_another_workspace_s_token_gets_404_everywhere(urls):
    acme = Workspace.objects.create(slug="acme", name="Acme")
    create_api_key(acme, name="acme-secret-name", actor="test")
    outsider = client_as(Workspace.objects.create(slug="globex", name="Globex"), "owner")
    for url in urls:
        for method in ("get", "post", "put", "patch", "delete"):
            response = getattr(outsider, method)(url, {}, format="json")
            assert response.status_code == 404, (method, url, response.status_code)
            assert b"acme-secret-name" not in response.content, url


def test_d_30_a_viewer_s_token_may_write_nowhere(urls):
    acme = Workspace.objects.create(slug="acme", name="Acme")
    viewer = client_as(acme, "viewer")
    for url in urls:
        for method in ("post", "put", "patch", "delete"):
            response = getattr(viewer, method)(url, {}, format="json")
            assert response.status_code == 403, (method, url, response.status_code)
