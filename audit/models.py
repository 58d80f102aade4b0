"""What happened: one RequestTrace per gateway request (decision, attempts, usage, cost —
never prompt or completion content) and AdminEvents for configuration changes."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from workspaces.models import ApiKey, Workspace


def _newest_first(name: str, *columns: str, condition: models.Q | None = None) -> models.Index:
    """An index of the workspace's rows by `columns`, newest first (audit/cursor.py)."""
    fields = ["workspace", *columns, "-created_at", "-id"]
    return models.Index(fields=fields, name=name, condition=condition)


class RequestTrace(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)  # the trace id
    request_id = models.CharField(max_length=64)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="traces")
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True)
    # When the request finished (set by the record step, so a trace written late from the
    # spool keeps its own time). The indexes below all end in it: the list's keyset order.
    created_at = models.DateTimeField(default=timezone.now)
    operation = models.CharField(max_length=24)  # chat.completions | responses | embeddings
    requested_model = models.CharField(max_length=200)
    model = models.CharField(max_length=200, blank=True, default="")  # the model that answered
    provider = models.CharField(max_length=64, blank=True, default="")
    endpoint = models.CharField(max_length=200, blank=True, default="")
    stream = models.BooleanField(default=False)
    status_code = models.PositiveSmallIntegerField()
    error_code = models.CharField(max_length=64, blank=True, default="")
    decision = models.JSONField(default=dict)
    attempts = models.JSONField(default=list)
    usage = models.JSONField(default=dict)
    cost_micros = models.BigIntegerField(default=0)  # USD × 1e6
    latency_ms = models.PositiveIntegerField(default=0)
    ttfb_ms = models.PositiveIntegerField(null=True, blank=True)
    # Why the gateway made this call: "" for a client's request, "auto_routing_classifier"
    # for the auto router's child request (R-AUTO-2), whose parent is the client's trace.
    purpose = models.CharField(max_length=40, blank=True, default="")
    parent_id = models.UUIDField(null=True, blank=True, db_index=True)
    # The dynamic route that handled the request, its version and the node that ended the
    # walk (SPEC R-ROUTE-1): what the rollout guard's windows and replay select by.
    route = models.CharField(max_length=64, blank=True, default="")
    route_version = models.PositiveIntegerField(null=True, blank=True)
    route_node = models.CharField(max_length=64, blank=True, default="")
    # Filter columns of the request log (GET /v1/traces, /api/v1/…/traces): the tier a
    # tiered alias chose (R-TIER-5) and the session id the client sent (R-EXE-7; "" for
    # none: a conversation hash is not an id anyone would search by).
    tier = models.CharField(max_length=8, blank=True, default="")
    session_id = models.CharField(max_length=128, blank=True, default="")

    class Meta:
        # One index per filter the request log serves in its keyset order (audit/cursor.py);
        # rare values (an error code, a session) are partial indexes, so the common rows
        # do not pay for them on insert. The route index also serves the rollout guard.
        indexes = [
            _newest_first("trace_ws_time"),
            _newest_first("trace_key_time", "api_key"),
            _newest_first("trace_model_time", "model"),
            _newest_first("trace_provider_time", "provider"),
            _newest_first("trace_endpoint_time", "endpoint"),
            _newest_first("trace_status_time", "status_code"),
            _newest_first("trace_error_time", "error_code", condition=~models.Q(error_code="")),
            _newest_first("trace_session_time", "session_id", condition=~models.Q(session_id="")),
            models.Index(fields=["route", "route_version", "route_node", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.requested_model} → {self.status_code}"


class AdminEvent(models.Model):
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(max_length=150)  # username, or "cli:<command>"
    workspace = models.ForeignKey(Workspace, on_delete=models.SET_NULL, null=True, blank=True)
    action = models.CharField(max_length=64)  # e.g. api_key.create, config.apply
    target = models.CharField(max_length=200, blank=True, default="")
    changes = models.JSONField(default=dict, blank=True)  # never secrets

    class Meta:
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="event_ws_time")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"
