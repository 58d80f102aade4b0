"""Trace retention: each workspace's policy says how long traces are kept (`30d`, `12h`,
`0d` = not kept beyond the purge run)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from audit.models import RequestTrace
from workspaces.models import Policy

_RETENTION = re.compile(r"^(\d+)([dh])$")


def parse_retention(value: str) -> timedelta | None:
    """`30d` -> 30 days; None when the value is not understood (then nothing is purged)."""
    match = _RETENTION.match(value.strip())
    if not match:
        return None
    amount, unit = int(match.group(1)), match.group(2)
    return timedelta(days=amount) if unit == "d" else timedelta(hours=amount)


def purge_expired_traces(now: datetime) -> int:
    """Delete traces older than their workspace's retention; returns how many."""
    deleted = 0
    for policy in Policy.objects.only("workspace_id", "retention"):
        keep = parse_retention(policy.retention)
        if keep is None:
            continue
        count, _ = RequestTrace.objects.filter(
            workspace_id=policy.workspace_id, created_at__lt=now - keep
        ).delete()
        deleted += count
    return deleted
