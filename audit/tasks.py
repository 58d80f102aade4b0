"""Celery tasks of the audit app: one-line calls into services."""

from celery import shared_task
from django.utils import timezone

from audit.retention import purge_expired_traces as purge


@shared_task(name="audit.tasks.purge_expired_traces")
def purge_expired_traces() -> int:
    return purge(timezone.now())
