"""The trace purge: each workspace's policy says how long its traces are kept. The format
(`30d`, `12h`, `0d` = not kept beyond the purge run) and its parser live in
workspaces/retention.py; `parse_retention` is re-exported here for existing callers."""

from __future__ import annotations

from datetime import datetime

from audit.models import RequestTrace
from workspaces.models import Policy
from workspaces.retention import parse_retention

__all__ = ["parse_retention", "purge_expired_traces"]


def purge_expired_traces(now: datetime) -> int:
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
        count, _ = RequestTrace.objects.filter(
            workspace_id=policy.workspace_id, created_at__lt=cutoff
        ).delete()
        deleted += count
    return deleted
