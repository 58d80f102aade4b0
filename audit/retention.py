"""The trace purge: each workspace's policy says how long its traces are kept. The format
(`30d`, `12h`, `0d` = not kept beyond the purge run) and its parser live in
workspaces/retention.py; `parse_retention` is re-exported here for existing callers.

Deleted in batches of `batch` rows, each its own short transaction, oldest first through
the workspace's time index: a purge of a million rows never holds a lock long enough to
slow the trace writer's inserts (SQLite locks the whole database while it writes)."""

from __future__ import annotations

from datetime import datetime

from audit.models import RequestTrace
from workspaces.models import Policy
from workspaces.retention import parse_retention

__all__ = ["parse_retention", "purge_expired_traces"]


BATCH = 2_000


def purge_expired_traces(now: datetime, batch: int = BATCH) -> int:
    """Delete traces older than their workspace's retention; returns how many."""
    deleted = 0
    for policy in Policy.objects.only("workspace_id", "retention"):
        keep = parse_retention(policy.retention)
        if keep is None:
            continue
        try:
            cutoff = now - keep
        except OverflowError:  # 999999d reaches before year 1: nothing is that old
            continue
        expired = RequestTrace.objects.filter(
            workspace_id=policy.workspace_id, created_at__lt=cutoff
        )
        while True:
            ids = list(expired.order_by("created_at").values_list("id", flat=True)[:batch])
            if not ids:
                break
            count, _ = RequestTrace.objects.filter(id__in=ids).delete()
            deleted += count
    return deleted
