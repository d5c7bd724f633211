"""The outbox of runs to start (runs.models.RunStart): every insert notifies run_worker's
dispatcher on the ``amtp_run_starts`` channel, whatever code inserts. Runs left pending by
earlier versions (Temporal was unreachable at submit) are not copied in: reconcile_runs starts
those."""

import django.db.models.deletion
from django.db import migrations, models


NOTIFY = """
CREATE FUNCTION run_starts_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('amtp_run_starts', '');
    RETURN NULL;
END $$;
CREATE TRIGGER run_starts_notify AFTER INSERT ON run_starts
    FOR EACH STATEMENT EXECUTE FUNCTION run_starts_notify();
"""
UNNOTIFY = """
DROP TRIGGER run_starts_notify ON run_starts;
DROP FUNCTION run_starts_notify();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0006_list_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunStart",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        db_column="run_id",
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="start",
                        serialize=False,
                        to="runs.run",
                    ),
                ),
                (
                    "task_queue",
                    models.CharField(
                        help_text="Where its workflow goes: TEMPORAL_TASK_QUEUE when accepted.",
                        max_length=200,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "db_table": "run_starts",
                "indexes": [models.Index(fields=["created_at"], name="run_starts_oldest_first")],
            },
        ),
        migrations.RunSQL(NOTIFY, UNNOTIFY),
    ]
