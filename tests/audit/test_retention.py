"""The trace purge (SPEC R-OBS-1 retention): each workspace's traces are kept as long as its
policy says, and a value the purge cannot act on keeps its traces rather than failing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import RequestTrace
from audit.retention import purge_expired_traces
from workspaces.models import Policy, Workspace
from workspaces.retention import parse_retention

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _workspace_with(retention: str, ages_h: list[float]) -> Workspace:
    workspace = Workspace.objects.create(slug=f"w-{retention}", name=retention)
    Policy.objects.create(workspace=workspace, retention=retention)
    for age in ages_h:
        RequestTrace.objects.create(
            request_id="r", workspace=workspace, operation="chat.completions",
            requested_model="m", status_code=200, created_at=NOW - timedelta(hours=age),
        )  # fmt: skip
    return workspace


@pytest.mark.parametrize(
    ("value", "expected"),
    [("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), (" 0d ", timedelta(0)),
     ("1w", None), ("1234567d", None), ("", None)],
)  # fmt: skip
def test_the_retention_format_is_days_or_hours(value, expected):
    assert parse_retention(value) == expected


@pytest.mark.django_db
def test_traces_older_than_their_workspace_retention_are_purged_and_others_kept():
    # given two workspaces with different retentions
    short = _workspace_with("12h", [1, 13, 48])
    long = _workspace_with("30d", [1, 13, 48])
    # when the purge runs
    deleted = purge_expired_traces(NOW)
    # then only the short workspace's traces past 12 h went
    assert deleted == 2
    assert RequestTrace.objects.filter(workspace=short).count() == 1
    assert RequestTrace.objects.filter(workspace=long).count() == 3


@pytest.mark.django_db
def test_a_retention_longer_than_the_calendar_keeps_everything_and_the_purge_goes_on():
    # given one workspace keeping traces for 999999 days (apply accepts six digits) and one
    # keeping them 12 hours
    forever = _workspace_with("999999d", [1, 10_000])
    short = _workspace_with("12h", [48])
    # when the purge runs
    deleted = purge_expired_traces(NOW)
    # then nothing of the first went, and the second workspace was still purged
    assert RequestTrace.objects.filter(workspace=forever).count() == 2
    assert RequestTrace.objects.filter(workspace=short).count() == 0
    assert deleted == 1


@pytest.mark.django_db
def test_the_purge_deletes_in_batches_each_its_own_short_statement():
    # given 25 expired traces and 2 kept ones
    short = _workspace_with("12h", [13 + n for n in range(25)] + [1, 2])
    # when the purge runs in batches of 10
    with CaptureQueriesContext(connection) as queries:
        deleted = purge_expired_traces(NOW, batch=10)
    # then all expired went, three DELETEs of at most 10 rows each (never one of all 25)
    assert deleted == 25
    assert RequestTrace.objects.filter(workspace=short).count() == 2
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 3
