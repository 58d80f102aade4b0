"""The budgets app took over the tables the workspaces app created (ADR 0007): migrating
an installation that has budgets, limits and spending keeps every row, and the move runs
no SQL at all."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from budgets.models import Budget, BudgetAlert, RateLimit, SpendEntry

BEFORE = [("workspaces", "0005_spend_entry_requests")]
MOVE = [("workspaces", "0006_move_budgets_out"), ("budgets", "0001_initial")]


def _leaves() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_the_move_keeps_every_row_of_an_installation_that_had_budgets():
    # given an installation at the last migration before the move, with rows in the tables
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    workspace = old.get_model("workspaces", "Workspace").objects.create(slug="acme", name="A")
    old.get_model("workspaces", "Budget").objects.create(
        workspace=workspace, key_name="bot", period="daily", limit_micros=5_000_000, alerts=[0.8]
    )
    old.get_model("workspaces", "RateLimit").objects.create(
        workspace=workspace, requests_per_minute=60
    )
    old.get_model("workspaces", "SpendEntry").objects.create(
        request_id="r1", counter="ws:1:daily:0", workspace_id=workspace.id, cost_micros=7
    )
    old.get_model("workspaces", "BudgetAlert").objects.create(counter="ws:1:daily:0", threshold=0.8)
    # when the move is applied
    try:
        MigrationExecutor(connection).migrate(_leaves())
        # then the budgets app's models read the same rows
        budget = Budget.objects.get()
        assert (budget.workspace.slug, budget.key_name, budget.limit_micros, budget.alerts) == (
            "acme", "bot", 5_000_000, [0.8],
        )  # fmt: skip
        assert RateLimit.objects.get().requests_per_minute == 60
        assert SpendEntry.objects.get().cost_micros == 7
        assert BudgetAlert.objects.get().threshold == 0.8
    finally:
        MigrationExecutor(connection).migrate(_leaves())


@pytest.mark.django_db(transaction=True)  # SQLite's schema editor, outside a transaction
def test_the_move_runs_no_sql():
    # when the move's migrations are turned into SQL (the first test runs them backwards)
    loader = MigrationExecutor(connection).loader
    statements = loader.collect_sql([(loader.graph.nodes[m], False) for m in MOVE])
    # then there is none: only Django's state moves, the tables stay as they are
    assert [s for s in statements if not s.lstrip().startswith("--")] == []
