"""Celery tasks of the routing app: one-line calls into the code the gateway's workers run
themselves when there is no broker (gateway/state/live_sharing.py)."""

import time

from celery import shared_task

from routing.rollup import SERIES, roll_up, slice_store


@shared_task(name="routing.tasks.roll_up_live_metrics")
def roll_up_live_metrics() -> int:
    """Every series' rollup (endpoints, and workspaces' own credentials) at one `now`."""
    now = time.time()
    return sum(roll_up(slice_store(series), now) for series in SERIES)
