"""The `routes:` section of `manage.py apply` (SPEC R-ROUTE-1/2, D-25, CONFIG.md): each
route validated whole with file paths, saved as versions, deployed with `--deploy`, and
exported as the deployed version."""

from __future__ import annotations

from typing import Any

import pytest

from declarative.fields import ConfigError
from management_api.config_apply import apply_config, export_config
from presets.models import Route

pytestmark = pytest.mark.django_db

CATALOG = {
    "providers": [{"slug": "groq", "base_url": "https://groq.example/v1"}],
    "models": [{"slug": "meta/llama-3.3-70b", "aliases": ["llama-3.3-70b-versatile"]}],
}


def route(model: str = "llama-3.3-70b-versatile") -> dict[str, Any]:
    return {"slug": "support", "start": "pick", "nodes": {"pick": {"type": "model",
                                                                   "model": model}}}  # fmt: skip


def config(*routes: dict[str, Any], keys: list | None = None) -> dict[str, Any]:
    workspace: dict[str, Any] = {"slug": "acme", "routes": list(routes)}
    if keys is not None:
        workspace["keys"] = keys
    return {**CATALOG, "workspaces": [workspace]}


def test_r_route_1_apply_reports_each_route_problem_with_its_path_in_the_file() -> None:
    bad = {"slug": "support", "start": "plan", "nodes": {
        "plan": {"type": "split", "by": "session",
                 "branches": [{"weight": 90, "next": "pick"}, {"weight": 10, "next": "canry"}]},
        "pick": {"type": "model", "model": "meta/llama-3.3-70b"},
    }}  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        apply_config(config(bad), actor="test")
    assert list(refused.value.errors) == [
        "workspaces[0].routes[0].nodes.plan.branches[1].next: unknown node 'canry'"
    ]
    assert Route.objects.count() == 0


def test_d_25_apply_saves_versions_and_deploys_only_when_asked() -> None:
    # when a route is applied, then applied again, then changed
    first = apply_config(config(route()), actor="test")
    again = apply_config(config(route()), actor="test")
    changed = apply_config(config(route("meta/llama-3.3-70b")), actor="test", deploy=True)
    # then
    assert first.as_dict()["route"]["created"] == 1
    assert again.changed is False
    assert "updated route acme/support: version 2, deployed v2" in changed.changes
    support = Route.objects.get(slug="support")
    assert (support.versions.count(), support.deployed.number) == (2, 2)
    # an alias in the file is kept as written; the engine resolves it when it loads
    assert support.versions.get(number=1).content == route()


def test_r_key_1_a_key_may_name_a_route_of_the_same_file() -> None:
    apply_config(config(route(), keys=[{"name": "bot", "routes": ["support"]}]), actor="test")
    with pytest.raises(ConfigError) as refused:
        apply_config(config(keys=[{"name": "bot", "routes": ["other"]}]), actor="test")
    assert list(refused.value.errors) == [
        "workspaces[0].keys[0].routes[0]: unknown route 'other' (not in this workspace)"
    ]


def test_export_writes_the_deployed_version_of_each_route() -> None:
    apply_config(config(route()), actor="test", deploy=True)
    apply_config(config(route("meta/llama-3.3-70b")), actor="test")  # a draft v2
    assert export_config(workspace="acme")["workspaces"][0]["routes"] == [route()]
