"""The live-metric rollup's tables (SPEC R-OBS-2): the slices workers hand in when there is
no Redis to hold them, and the rollup every router reads (`EndpointStats`). Not catalog:
no foreign key to `Endpoint`, so a rollup never blocks a catalog change (an endpoint
removed from the catalog leaves the window within five minutes)."""

from __future__ import annotations

from django.db import models


class LiveSlice(models.Model):
    """What one worker observed between two of its ticks (routing/engine/live_slices.py)."""

    # The workers that share a rollup: those with one SWITCHYARD_SHARED_STATE_PREFIX.
    fleet = models.CharField(max_length=100)
    end = models.FloatField()  # epoch seconds: the slice's last observation
    payload = models.JSONField()

    class Meta:
        indexes = [models.Index(fields=["fleet", "end"], name="live_slice_fleet_end")]

    def __str__(self) -> str:
        return f"slice to {self.end:.1f}"


class EndpointStats(models.Model):
    """One endpoint's rolling five minutes over every worker of a fleet, as of `computed_at`."""

    fleet = models.CharField(max_length=100)
    endpoint = models.CharField(max_length=200)
    provider = models.CharField(max_length=64)
    computed_at = models.DateTimeField()
    requests = models.PositiveIntegerField(default=0)  # attempts in the window (D-31)
    latency_p50_ms = models.FloatField(null=True)
    latency_p90_ms = models.FloatField(null=True)
    latency_p99_ms = models.FloatField(null=True)
    ttft_p50_ms = models.FloatField(null=True)
    ttft_p90_ms = models.FloatField(null=True)
    ttft_p99_ms = models.FloatField(null=True)
    throughput_tps = models.FloatField(null=True)
    error_rate = models.FloatField(null=True)
    reliability = models.FloatField(null=True)  # 1 - error_rate
    rate_limited = models.PositiveIntegerField(default=0)
    geo_blocked = models.PositiveIntegerField(default=0)
    # What routers merge their own unseen observations into: the histogram
    # (routing/engine/live_window.py) and, per worker, the end of its last slice in it.
    window = models.JSONField(default=dict)
    included = models.JSONField(default=dict)

    class Meta:
        verbose_name_plural = "endpoint stats"
        constraints = [
            models.UniqueConstraint(fields=["fleet", "endpoint"], name="endpoint_stats_per_fleet")
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} ({self.requests} requests)"
