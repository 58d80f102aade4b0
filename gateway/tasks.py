"""Celery tasks of the gateway: one-line calls into the code the in-process scheduler
runs too (gateway/scheduler.py)."""

import time

from celery import shared_task
from django.conf import settings

from gateway.scheduler import guard_rollouts


@shared_task(name="gateway.tasks.check_rollout_guards")
def check_rollout_guards() -> int:
    return len(guard_rollouts(time.time(), interval_s=settings.ROLLOUT_GUARD_INTERVAL_S))
