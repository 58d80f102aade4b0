"""The Celery app. With no CELERY_BROKER_URL, tasks run in-process (always eager), so a
single `make run` needs no broker; production runs a worker and one beat."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

app = Celery("switchyard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.beat_schedule = {
    "purge-expired-traces": {"task": "audit.tasks.purge_expired_traces", "schedule": 3600.0},
    # Each guarded route is judged per its own interval_s; this is how often they are looked at.
    "check-rollout-guards": {"task": "gateway.tasks.check_rollout_guards", "schedule": 5.0},
    # Every worker's live-metric slices into EndpointStats, which the routers read (R-OBS-2).
    "roll-up-live-metrics": {
        "task": "routing.tasks.roll_up_live_metrics",
        "schedule": float(os.environ.get("SWITCHYARD_LIVE_ROLLUP_S") or 5.0),
    },
}
app.autodiscover_tasks()
