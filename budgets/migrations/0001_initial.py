"""The budgets app takes over the tables the workspaces app created (0004, 0005):
Django's state learns the models, the database is not touched (`db_table` keeps the
names). See docs/decisions/0007-budgets-app.md."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('workspaces', '0006_move_budgets_out'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='BudgetCounter',
                    fields=[
                        ('counter', models.CharField(max_length=200, primary_key=True, serialize=False)),
                        ('spent_micros', models.BigIntegerField(default=0)),
                        ('reserved_micros', models.BigIntegerField(default=0)),
                        ('requests', models.BigIntegerField(default=0)),
                    ],
                    options={
                        'db_table': 'workspaces_budgetcounter',
                    },
                ),
                migrations.CreateModel(
                    name='BudgetReservation',
                    fields=[
                        ('request_id', models.CharField(max_length=64, primary_key=True, serialize=False)),
                        ('counters', models.JSONField()),
                        ('workspace_id', models.BigIntegerField()),
                        ('amount_micros', models.BigIntegerField()),
                        ('expires_at', models.FloatField(db_index=True)),
                    ],
                    options={
                        'db_table': 'workspaces_budgetreservation',
                    },
                ),
                migrations.CreateModel(
                    name='BudgetAlert',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('counter', models.CharField(max_length=200)),
                        ('threshold', models.FloatField()),
                        ('at', models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        'db_table': 'workspaces_budgetalert',
                        'constraints': [models.UniqueConstraint(fields=('counter', 'threshold'), name='alert_once_per_period')],
                    },
                ),
                migrations.CreateModel(
                    name='SpendEntry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('request_id', models.CharField(max_length=64)),
                        ('counter', models.CharField(max_length=200)),
                        ('workspace_id', models.BigIntegerField()),
                        ('cost_micros', models.BigIntegerField()),
                        ('kind', models.CharField(choices=[('settled', 'Settled'), ('expired', 'Expired')], default='settled', max_length=8)),
                        ('at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('requests', models.PositiveIntegerField(default=1)),
                    ],
                    options={
                        'verbose_name_plural': 'spend entries',
                        'db_table': 'workspaces_spendentry',
                        'indexes': [models.Index(fields=['counter'], name='spend_by_counter')],
                        'constraints': [models.UniqueConstraint(fields=('request_id', 'counter'), name='spent_once')],
                    },
                ),
                migrations.CreateModel(
                    name='Budget',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key_name', models.CharField(blank=True, default='', max_length=100)),
                        ('period', models.CharField(choices=[('daily', 'Daily'), ('weekly', 'Weekly'), ('monthly', 'Monthly')], max_length=8)),
                        ('limit_micros', models.BigIntegerField()),
                        ('alerts', models.JSONField(blank=True, default=list)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='budgets', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'workspaces_budget',
                        'constraints': [models.UniqueConstraint(fields=('workspace', 'key_name', 'period'), name='one_budget_per_scope_and_period')],
                    },
                ),
                migrations.CreateModel(
                    name='RateLimit',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key_name', models.CharField(blank=True, default='', max_length=100)),
                        ('requests_per_minute', models.PositiveIntegerField(blank=True, null=True)),
                        ('tokens_per_minute', models.PositiveBigIntegerField(blank=True, null=True)),
                        ('concurrent', models.PositiveIntegerField(blank=True, null=True)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rate_limits', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'workspaces_ratelimit',
                        'constraints': [models.UniqueConstraint(fields=('workspace', 'key_name'), name='one_limit_per_scope')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
