"""The Repository model moved here from ``runs``: its table ``repositories`` and data stay.

State only; the table was created by ``runs.0001_initial``.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("runs", "0002_api_tokens_webhook_deliveries"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Repository",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "full_name",
                            models.CharField(help_text="owner/name", max_length=200, unique=True),
                        ),
                        (
                            "host",
                            models.CharField(
                                choices=[("github", "Github"), ("local", "Local")],
                                default="github",
                                max_length=16,
                            ),
                        ),
                        (
                            "local_path",
                            models.CharField(
                                blank=True,
                                help_text="Path of the git repository (host 'local').",
                                max_length=1000,
                            ),
                        ),
                        ("default_branch", models.CharField(default="main", max_length=255)),
                        (
                            "default_depth_level",
                            models.CharField(
                                choices=[
                                    ("smoke", "Smoke"),
                                    ("core", "Core"),
                                    ("standard", "Standard"),
                                    ("deep", "Deep"),
                                ],
                                default="standard",
                                max_length=16,
                            ),
                        ),
                        (
                            "default_framework",
                            models.CharField(
                                choices=[("playwright", "Playwright"), ("maestro", "Maestro")],
                                default="playwright",
                                max_length=16,
                            ),
                        ),
                        (
                            "test_dir",
                            models.CharField(
                                default="e2e/amtp",
                                help_text="Generated files may only go here.",
                                max_length=200,
                            ),
                        ),
                        (
                            "webhook_enabled",
                            models.BooleanField(default=False, help_text="Push events start runs."),
                        ),
                        (
                            "webhook_branches",
                            models.JSONField(
                                blank=True,
                                default=list,
                                help_text="Branches whose pushes start a run (empty: default).",
                            ),
                        ),
                        (
                            "require_approval",
                            models.BooleanField(
                                default=False,
                                help_text="Hold every run for a human approval before the PR is opened.",
                            ),
                        ),
                        ("max_concurrent_runs", models.PositiveIntegerField(default=2)),
                        (
                            "rate_limit_runs",
                            models.PositiveIntegerField(default=30, help_text="Runs per window."),
                        ),
                        ("rate_limit_window_seconds", models.PositiveIntegerField(default=3600)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "verbose_name_plural": "repositories",
                        "db_table": "repositories",
                        "ordering": ["full_name"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("host__in", ["github", "local"])),
                                name="repositories_host_valid",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    (
                                        "default_depth_level__in",
                                        ["smoke", "core", "standard", "deep"],
                                    )
                                ),
                                name="repositories_depth_valid",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("default_framework__in", ["playwright", "maestro"])
                                ),
                                name="repositories_framework_valid",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("full_name__regex", "^[^/]+/[^/]+$")),
                                name="repositories_full_name_valid",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("host", "local"), _negated=True),
                                    models.Q(("local_path", ""), _negated=True),
                                    _connector="OR",
                                ),
                                name="repositories_local_needs_path",
                            ),
                        ],
                    },
                )
            ]
        ),
    ]
