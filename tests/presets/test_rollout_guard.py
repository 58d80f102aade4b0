"""The rollout guard (SPEC R-BEY-4, D-26) over traces in the database, with a controlled
clock: a watched node worse than its baseline after `min_requests` is rolled back to the
version deployed before, once, with every number in the audit event."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from audit.models import AdminEvent, RequestTrace
from presets import rollout_guard
from presets.models import Route
from presets.rollout_guard import check_rollout_guards
from presets.services import deploy_route, save_route
from routing.models import Model, Provider
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC).timestamp()
GUARD = {"node": "canary", "baseline": "stable", "min_requests": 20,
         "max_error_rate_delta": 0.05, "max_p99_ratio": 2.0, "window_s": 300}  # fmt: skip


@pytest.fixture(autouse=True)
def _fresh_guard_memory() -> None:
    rollout_guard._last_judged.clear()


@pytest.fixture
def guarded() -> Route:
    Provider.objects.create(slug="p", name="p", base_url="https://p.example/v1")
    for slug in ("acme/stable", "acme/canary"):
        Model.objects.create(slug=slug, capabilities=["text"])
    workspace = Workspace.objects.create(slug="acme", name="ACME")
    plain = {"slug": "r", "start": "stable",
             "nodes": {"stable": {"type": "model", "model": "acme/stable"}}}  # fmt: skip
    canary = {"slug": "r", "start": "split", "rollout_guard": GUARD, "nodes": {
        "split": {"type": "split", "by": "session", "branches": [
            {"weight": 90, "next": "stable"}, {"weight": 10, "next": "canary"}]},
        "stable": {"type": "model", "model": "acme/stable"},
        "canary": {"type": "model", "model": "acme/canary"},
    }}  # fmt: skip
    route = save_route(workspace, plain, actor="ann").route
    deploy_route(route, actor="ann")
    save_route(workspace, canary, actor="ann")
    deploy_route(route, actor="ann")  # v2, guarded
    return Route.objects.get(pk=route.pk)


def traces(route: Route, node: str, count: int, *, errors: int = 0, latency_ms: int = 100,
           age_s: float = 10, **fields: Any) -> None:  # fmt: skip
    RequestTrace.objects.bulk_create(
        RequestTrace(
            id=uuid.uuid4(), request_id="r", workspace=route.workspace,
            created_at=datetime.fromtimestamp(NOW - age_s, tz=UTC), operation="chat.completions",
            requested_model="auto", status_code=502 if i < errors else 200,
            latency_ms=latency_ms, cost_micros=10, route=route.slug, route_version=2,
            route_node=node, **fields,
        )
        for i in range(count)
    )  # fmt: skip


def test_r_bey_4_errors_on_the_canary_roll_the_route_back_with_the_numbers(guarded) -> None:
    # given the canary failing a quarter of its requests, its baseline none
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 40, errors=10)
    # when the guard runs
    rolled = check_rollout_guards(NOW)
    # then v2 is rolled back to v1
    assert [(r.route, r.version, r.to) for r in rolled] == [("r", 2, 1)]
    assert Route.objects.get(pk=guarded.pk).deployed.number == 1
    event = AdminEvent.objects.get(action="route.guard_rollback")
    assert (event.actor, event.target, event.changes["deployed_version"]) == (
        "rollout-guard", "r v1", {"before": 2, "after": 1},
    )  # fmt: skip
    numbers = event.changes["numbers"]
    assert (numbers["watched_error_rate"], numbers["baseline_error_rate"]) == (0.25, 0.0)
    assert numbers["max_error_rate_delta"] == 0.05
    assert numbers["reasons"] == [
        "error rate 25.0% on canary vs 0.0% on stable: +25.0 points > 5.0 allowed"
    ]


def test_r_bey_4_a_slow_canary_breaches_the_p99_bound(guarded) -> None:
    traces(guarded, "stable", 100, latency_ms=100)
    traces(guarded, "canary", 30, latency_ms=450)
    assert [r.to for r in check_rollout_guards(NOW)] == [1]


def test_d_26_no_verdict_before_min_requests_on_both_sides(guarded) -> None:
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 19, errors=19)
    assert check_rollout_guards(NOW) == []
    assert Route.objects.get(pk=guarded.pk).deployed.number == 2


def test_d_26_only_the_window_counts(guarded) -> None:
    # given the failures happened before the window
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 40, errors=40, age_s=301)
    traces(guarded, "canary", 40, age_s=10)
    assert check_rollout_guards(NOW) == []


def test_d_26_a_route_is_judged_once_per_interval_and_rolled_back_once(guarded) -> None:
    # given a healthy window, judged now
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 40)
    assert check_rollout_guards(NOW) == []
    # when failures arrive and the guard runs again within the interval (30 s)
    traces(guarded, "canary", 40, errors=40)
    assert check_rollout_guards(NOW + 10) == []
    # then only the next interval judges them, and a second pass finds nothing to do
    assert [r.to for r in check_rollout_guards(NOW + 31)] == [1]
    assert check_rollout_guards(NOW + 62) == []
    assert AdminEvent.objects.filter(action="route.guard_rollback").count() == 1


def test_r_bey_4_another_workspace_s_route_of_the_same_slug_is_not_judged_with_it(
    guarded,
) -> None:
    # given a second workspace whose route `r` v2 fails on its own `canary` node
    other = Workspace.objects.create(slug="globex", name="Globex")
    twin = Route.objects.create(workspace=other, slug="r")
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 40)
    traces(twin, "canary", 200, errors=200)
    # when the guard judges acme's route
    rolled = check_rollout_guards(NOW)
    # then acme's healthy canary stays deployed: globex's failures are not its traffic
    assert rolled == []
    assert Route.objects.get(pk=guarded.pk).deployed.number == 2
