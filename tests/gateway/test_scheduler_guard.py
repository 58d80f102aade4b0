"""The gateway's pass of the rollout guard (gateway/scheduler.py `guard_rollouts`, also
Celery's task): what the guard rolls back is counted in
`switchyard_route_rollbacks_total` by route and version, once."""

from __future__ import annotations

import pytest

from gateway import metrics
from gateway.scheduler import guard_rollouts
from tests.presets.test_rollout_guard import NOW, _fresh_guard_memory, guarded, traces  # noqa: F401

pytestmark = pytest.mark.django_db


def _count(route: str, version: str) -> float:
    return metrics.ROUTE_ROLLBACKS.labels(route, version)._value.get()


def test_r_bey_4_each_rollback_is_counted_once(guarded) -> None:  # noqa: F811
    # given a canary failing a quarter of its requests
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 40, errors=10)
    before = _count("r", "2")
    # when the gateway's guard pass runs twice
    rolled = guard_rollouts(NOW, interval_s=None)
    again = guard_rollouts(NOW + 60, interval_s=None)
    # then v2's rollback is counted once
    assert [(r.route, r.version) for r in rolled] == [("r", 2)]
    assert again == []
    assert _count("r", "2") == before + 1
