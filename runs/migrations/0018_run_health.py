"""``run_health``: one row per ended run whose verification report ran the tests, kept by
PostgreSQL like the rollups (0016): ``amtp_health_runs(ids)`` reads the reports of ended runs
once, and a deferred trigger calls it for each run whose status becomes terminal, whichever code
ended it. Counts come from the report's ``tests`` (not its ``totals``), each field read only
when it has the type the contract gives it, so a report missing fields adds what it has. The
trigger never stops a run from ending: a report it cannot read is left out with a warning."""

import django.db.models.deletion
from django.db import migrations, models


ENDED = "('passed', 'failed', 'cancelled')"
STATUSES = "('passed', 'failed', 'flaky', 'healed', 'quarantined', 'skipped')"


def _text(key: str, limit: int) -> str:
    return (
        f"CASE WHEN jsonb_typeof(e->'{key}') = 'string' THEN left(e->>'{key}', {limit}) ELSE '' END"
    )


def _count(status: str) -> str:
    return f"count(*) FILTER (WHERE t.status = '{status}')"


HEALTH = f"""
CREATE FUNCTION amtp_health_runs(ids uuid[]) RETURNS void LANGUAGE sql AS $$
INSERT INTO run_health (run_id, repository_id, kind, finished_at, tests, passed, flaky, healed,
  quarantined, failed, skipped, outcomes)
SELECT r.run_id, r.repository_id, r.kind, COALESCE(r.finished_at, now()), count(t.status),
  {_count("passed")}, {_count("flaky")}, {_count("healed")}, {_count("quarantined")},
  {_count("failed")}, {_count("skipped")},
  COALESCE(jsonb_agg(jsonb_build_array(t.file, t.title, t.status, t.reason) ORDER BY t.n)
    FILTER (WHERE t.status IS NOT NULL), '[]'::jsonb)
FROM runs r
-- LIMIT: a lookup per run on artifacts_one_per_run_and_kind, never a join over every report
JOIN LATERAL (
  SELECT content FROM artifacts
  WHERE run_id = r.run_id AND kind = 'verification_report' LIMIT 1
) a ON a.content->>'status' = 'verified'
LEFT JOIN LATERAL (
  SELECT x.n, {_text("file", 1024)} AS file, {_text("title", 1000)} AS title,
    e->>'status' AS status,
    CASE WHEN e->>'status' = 'quarantined' THEN {_text("reason", 500)} ELSE '' END AS reason
  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.content->'tests') = 'array'
    THEN a.content->'tests' ELSE '[]'::jsonb END) WITH ORDINALITY AS x(e, n)
  WHERE jsonb_typeof(e) = 'object' AND e->>'status' IN {STATUSES}
) t ON true
WHERE r.run_id = ANY(ids) AND r.status IN {ENDED}
GROUP BY r.run_id
ON CONFLICT (run_id) DO NOTHING;
$$;

CREATE FUNCTION amtp_health_run_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM amtp_health_runs(ARRAY[NEW.run_id]);
    RETURN NULL;
EXCEPTION WHEN others THEN
    RAISE WARNING 'run_health: run % left out: %', NEW.run_id, SQLERRM;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER runs_health_on_end AFTER UPDATE OF status ON runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.status NOT IN {ENDED} AND NEW.status IN {ENDED})
    EXECUTE FUNCTION amtp_health_run_end();

SELECT amtp_health_runs(ARRAY(SELECT run_id FROM runs WHERE status IN {ENDED}));
"""
UNHEALTH = """
DROP TRIGGER runs_health_on_end ON runs;
DROP FUNCTION amtp_health_run_end();
DROP FUNCTION amtp_health_runs(uuid[]);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("repositories", "0009_notifications_and_retention"),
        ("runs", "0017_notifications"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunHealth",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="health",
                        serialize=False,
                        to="runs.run",
                    ),
                ),
                ("kind", models.CharField(max_length=16)),
                ("finished_at", models.DateTimeField()),
                (
                    "tests",
                    models.IntegerField(
                        default=0, help_text="Tests in the report, skipped ones too."
                    ),
                ),
                ("passed", models.IntegerField(default=0)),
                ("flaky", models.IntegerField(default=0, help_text="Passed on a retry.")),
                ("healed", models.IntegerField(default=0)),
                ("quarantined", models.IntegerField(default=0)),
                ("failed", models.IntegerField(default=0)),
                ("skipped", models.IntegerField(default=0)),
                (
                    "outcomes",
                    models.JSONField(
                        default=list,
                        help_text="[file, title, status, reason] per test; the reason of quarantined ones only.",
                    ),
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
                "db_table": "run_health",
                "indexes": [
                    models.Index(fields=["repository", "-finished_at"], name="run_health_newest")
                ],
            },
        ),
        migrations.RunSQL(HEALTH, UNHEALTH),
    ]
