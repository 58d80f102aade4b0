"""Budgets, rate limits and the ledger belong to the budgets app: only Django's
state forgets them here; their tables stay, under their names (budgets/migrations/0001).
See docs/decisions/0007-budgets-app.md."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0005_spend_entry_requests"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="budget",
                    name="workspace",
                ),
                migrations.DeleteModel(
                    name="BudgetAlert",
                ),
                migrations.DeleteModel(
                    name="BudgetCounter",
                ),
                migrations.DeleteModel(
                    name="BudgetReservation",
                ),
                migrations.RemoveField(
                    model_name="ratelimit",
                    name="workspace",
                ),
                migrations.DeleteModel(
                    name="SpendEntry",
                ),
                migrations.DeleteModel(
                    name="Budget",
                ),
                migrations.DeleteModel(
                    name="RateLimit",
                ),
            ],
            database_operations=[],
        ),
    ]
