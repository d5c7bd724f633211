"""Drop the indexes of ``runs`` that no list needs (scripts/bench_lists.py prints each index's
scans): the framework and depth filters are served by ``runs_newest_page``, which includes both
columns, and ``request_key``'s LIKE index (``varchar_pattern_ops``, added by ``unique=True``)
serves no query: uniqueness stays, as a constraint with one index.

Without locking writes, as 0006 built them: the new unique index is built concurrently, then
becomes the constraint, and only then is the old constraint dropped."""

from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations, models

UNIQUE_FIRST = [
    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS runs_request_key_unique ON runs (request_key)",
    "ALTER TABLE runs ADD CONSTRAINT runs_request_key_unique UNIQUE USING INDEX "
    "runs_request_key_unique",
    "ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_request_key_key",
]
UNIQUE_BACK = [
    "ALTER TABLE runs ADD CONSTRAINT runs_request_key_key UNIQUE (request_key)",
    "ALTER TABLE runs DROP CONSTRAINT runs_request_key_unique",
]
LIKE_INDEX = "runs_request_key_fa104eb2_like"


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("repositories", "0002_verification_settings"),
        ("runs", "0007_run_starts"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="run", name="runs_target_framework_page"),
        RemoveIndexConcurrently(model_name="run", name="runs_depth_level_page"),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(UNIQUE_FIRST, UNIQUE_BACK),
                migrations.RunSQL(
                    [f"DROP INDEX CONCURRENTLY IF EXISTS {LIKE_INDEX}"],
                    [
                        f"CREATE INDEX CONCURRENTLY {LIKE_INDEX} ON runs (request_key varchar_pattern_ops)"
                    ],
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="request_key",
                    field=models.CharField(
                        blank=True,
                        help_text=(
                            "Idempotency-Key of the request (or webhook delivery) that created "
                            "the run."
                        ),
                        max_length=200,
                        null=True,
                    ),
                ),
                migrations.AddConstraint(
                    model_name="run",
                    constraint=models.UniqueConstraint(
                        fields=("request_key",), name="runs_request_key_unique"
                    ),
                ),
            ],
        ),
    ]
