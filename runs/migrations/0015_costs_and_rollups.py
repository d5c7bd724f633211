"""The tables of costs per run (``run_costs``) and of the daily rollups (``run_days``,
``stage_days``); 0014 makes PostgreSQL keep the rollups."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("repositories", "0005_repository_grants"),
        ("runs", "0014_maintenance"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunCost",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("agent", models.CharField(max_length=40)),
                ("provider", models.CharField(max_length=40)),
                ("model", models.CharField(max_length=200)),
                ("calls", models.PositiveIntegerField(default=0)),
                (
                    "input_tokens",
                    models.BigIntegerField(
                        default=0, help_text="Every prompt token, cache reads and writes included."
                    ),
                ),
                ("output_tokens", models.BigIntegerField(default=0)),
                ("cache_read_tokens", models.BigIntegerField(default=0)),
                ("cache_write_tokens", models.BigIntegerField(default=0)),
                (
                    "cost_usd",
                    models.DecimalField(
                        blank=True,
                        decimal_places=8,
                        help_text="At the prices of when it was stored; empty: the model's price is unknown.",
                        max_digits=16,
                        null=True,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "run",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="costs",
                        to="runs.run",
                    ),
                ),
            ],
            options={
                "db_table": "run_costs",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "agent", "model"), name="run_costs_one_per_agent_and_model"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RunDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField()),
                ("status", models.CharField(max_length=16)),
                ("runs", models.IntegerField(default=0)),
                (
                    "duration_s",
                    models.FloatField(default=0, help_text="Sum of the runs' durations."),
                ),
                (
                    "cost_usd",
                    models.DecimalField(
                        decimal_places=8,
                        default=0,
                        help_text="Of the runs of known cost.",
                        max_digits=20,
                    ),
                ),
                (
                    "runs_cost_unknown",
                    models.IntegerField(
                        default=0, help_text="Runs with a model of unknown price (not in cost_usd)."
                    ),
                ),
                ("input_tokens", models.BigIntegerField(default=0)),
                ("output_tokens", models.BigIntegerField(default=0)),
                ("cache_read_tokens", models.BigIntegerField(default=0)),
                ("cache_write_tokens", models.BigIntegerField(default=0)),
                (
                    "tests",
                    models.IntegerField(
                        default=0, help_text="Tests verified (skipped ones left out)."
                    ),
                ),
                (
                    "tests_first_attempt",
                    models.IntegerField(default=0, help_text="Passed on attempt 1."),
                ),
                (
                    "tests_passed",
                    models.IntegerField(default=0, help_text="Passed in the end: healed too."),
                ),
                (
                    "repository",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="repositories.repository",
                    ),
                ),
            ],
            options={
                "db_table": "run_days",
                "indexes": [models.Index(fields=["day"], name="run_days_by_day")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("repository", "day", "status"), name="run_days_one_per_key"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="StageDay",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField()),
                ("stage", models.CharField(max_length=32)),
                ("bucket", models.SmallIntegerField()),
                ("stages", models.IntegerField(default=0)),
                (
                    "repository",
                    models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="repositories.repository",
                    ),
                ),
            ],
            options={
                "db_table": "stage_days",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("repository", "day", "stage", "bucket"),
                        include=("stages",),
                        name="stage_days_one_per_key",
                        nulls_distinct=False,
                    )
                ],
            },
        ),
    ]
