"""Budgets and rate limits as configured (SPEC R-LIM-1, R-LIM-2, D-28), and what spending
leaves behind: the ledger, the database store's counters and open reservations, and the
alerts already fired. The tables keep the names they were created with in the workspaces
app (`workspaces_budget`, ...; docs/decisions/0007-budgets-app.md): moving the models
changed no row.

Money is integer micro-dollars. A counter is one scope's spending in one calendar period,
named `ws:12:daily:1796083200` (scope, period, the period's start in epoch seconds): the
ledger rows and every store use that name, so a counter can be rebuilt from the ledger.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

KEY_NAME_CHARS = 100  # ApiKey.name
COUNTER_CHARS = 200


class Budget(models.Model):
    """A spending cap of the workspace (`key_name` empty) or of the key of that name (D-24:
    settings by name, so a key made later, or rotated, keeps it), per UTC calendar period,
    with alert thresholds (fractions of the cap, each fired once per period)."""

    class Period(models.TextChoices):
        DAILY = "daily"
        WEEKLY = "weekly"
        MONTHLY = "monthly"

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="budgets"
    )
    key_name = models.CharField(max_length=KEY_NAME_CHARS, blank=True, default="")
    period = models.CharField(max_length=8, choices=Period.choices)
    limit_micros = models.BigIntegerField()
    alerts = models.JSONField(default=list, blank=True)  # [0.8, 0.95]

    class Meta:
        db_table = "workspaces_budget"
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "key_name", "period"], name="one_budget_per_scope_and_period"
            )
        ]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.key_name or '*'} {self.period}"


class RateLimit(models.Model):
    """Requests and tokens per minute and concurrent requests, of the workspace
    (`key_name` empty) or of the key of that name; None = no limit of that kind."""

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="rate_limits"
    )
    key_name = models.CharField(max_length=KEY_NAME_CHARS, blank=True, default="")
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveBigIntegerField(null=True, blank=True)
    concurrent = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        db_table = "workspaces_ratelimit"
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key_name"], name="one_limit_per_scope")
        ]

    def __str__(self) -> str:
        return f"{self.workspace}/{self.key_name or '*'} limits"


class SpendEntry(models.Model):
    """The ledger, the durable truth of spending: what one request (or one allowance's
    requests) cost, once per counter it was charged to. Counters rebuild from it (after a
    Redis flush, in a new process)."""

    class Kind(models.TextChoices):
        SETTLED = "settled"  # the request ended; its cost is the usage (or D-28's estimate)
        EXPIRED = "expired"  # its process died: the sweeper charged the whole reservation

    request_id = models.CharField(max_length=64)  # the trace id
    counter = models.CharField(max_length=COUNTER_CHARS)
    workspace_id = models.BigIntegerField()
    cost_micros = models.BigIntegerField()
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.SETTLED)
    at = models.DateTimeField(default=timezone.now)
    # How many requests the row is for: 1, or a worker's allowance's (budgets/rules/
    # allowance.py: one row for the requests it admitted together).
    requests = models.PositiveIntegerField(default=1)

    class Meta:
        db_table = "workspaces_spendentry"
        verbose_name_plural = "spend entries"
        indexes = [models.Index(fields=["counter"], name="spend_by_counter")]
        constraints = [models.UniqueConstraint(fields=["request_id", "counter"], name="spent_once")]


class BudgetCounter(models.Model):
    """The database store's counters (PostgreSQL without Redis): spent and reserved."""

    counter = models.CharField(max_length=COUNTER_CHARS, primary_key=True)
    spent_micros = models.BigIntegerField(default=0)
    reserved_micros = models.BigIntegerField(default=0)
    requests = models.BigIntegerField(default=0)

    class Meta:
        db_table = "workspaces_budgetcounter"


class BudgetReservation(models.Model):
    """An open reservation of the database store; the sweeper settles it when its request's
    process died (`expires_at` passed)."""

    request_id = models.CharField(max_length=64, primary_key=True)
    counters = models.JSONField()
    workspace_id = models.BigIntegerField()
    amount_micros = models.BigIntegerField()
    expires_at = models.FloatField(db_index=True)  # epoch seconds

    class Meta:
        db_table = "workspaces_budgetreservation"


class BudgetAlert(models.Model):
    """An alert threshold crossed: unique per counter and threshold, so each fires once per
    period whichever replica sees it first."""

    counter = models.CharField(max_length=COUNTER_CHARS)
    threshold = models.FloatField()
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "workspaces_budgetalert"
        constraints = [
            models.UniqueConstraint(fields=["counter", "threshold"], name="alert_once_per_period")
        ]
