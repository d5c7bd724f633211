"""Costs per run (``run_costs``) and the daily rollups (``run_days``, ``stage_days``), kept by
PostgreSQL: ``amtp_rollup_runs(ids)`` adds ended runs to them (set-based: the backfill below
and ``scripts/bench_dashboard.py`` use it for many runs at once), and a deferred trigger calls it
for each run whose status becomes terminal, at commit, when its stages, costs and verification
report are all in place, whichever code ended it (``runs.outcome``, reconcile, a cancel).
Rows are inserted in key order, so concurrent run ends cannot deadlock on them."""

import django.db.models.deletion
from django.db import migrations, models


DAY = "(COALESCE(r.finished_at, now()) AT TIME ZONE 'UTC')::date"
ENDED = "('passed', 'failed', 'cancelled')"
ROLLUP = f"""
CREATE FUNCTION amtp_rollup_runs(ids uuid[]) RETURNS void LANGUAGE sql AS $$
INSERT INTO run_days AS d (day, repository_id, status, runs, duration_s, cost_usd,
  runs_cost_unknown, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tests,
  tests_first_attempt, tests_passed)
SELECT {DAY}, r.repository_id, r.status, count(*),
  COALESCE(sum(extract(epoch FROM r.finished_at - r.started_at)), 0),
  COALESCE(sum(c.cost) FILTER (WHERE c.unknown = 0), 0), count(*) FILTER (WHERE c.unknown > 0),
  COALESCE(sum(c.input), 0), COALESCE(sum(c.output), 0), COALESCE(sum(c.read), 0),
  COALESCE(sum(c.write), 0), COALESCE(sum(v.tests), 0), COALESCE(sum(v.first), 0),
  COALESCE(sum(v.passed), 0)
FROM runs r
LEFT JOIN LATERAL (
  SELECT sum(cost_usd) AS cost, count(*) FILTER (WHERE cost_usd IS NULL) AS unknown,
    sum(input_tokens) AS input, sum(output_tokens) AS output, sum(cache_read_tokens) AS read,
    sum(cache_write_tokens) AS write
  FROM run_costs WHERE run_id = r.run_id
) c ON true
LEFT JOIN LATERAL (
  SELECT count(*) FILTER (WHERE t->>'status' <> 'skipped') AS tests,
    count(*) FILTER (WHERE t->>'status' = 'passed' AND t->>'attempts' = '1') AS first,
    count(*) FILTER (WHERE t->>'status' IN ('passed', 'flaky', 'healed')) AS passed
  FROM artifacts a, jsonb_array_elements(
    CASE WHEN jsonb_typeof(a.content->'tests') = 'array' THEN a.content->'tests'
         ELSE '[]'::jsonb END) t
  WHERE a.run_id = r.run_id AND a.kind = 'verification_report'
) v ON true
WHERE r.run_id = ANY(ids) AND r.status IN {ENDED}
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (day, repository_id, status) DO UPDATE SET
  runs = d.runs + EXCLUDED.runs, duration_s = d.duration_s + EXCLUDED.duration_s,
  cost_usd = d.cost_usd + EXCLUDED.cost_usd,
  runs_cost_unknown = d.runs_cost_unknown + EXCLUDED.runs_cost_unknown,
  input_tokens = d.input_tokens + EXCLUDED.input_tokens,
  output_tokens = d.output_tokens + EXCLUDED.output_tokens,
  cache_read_tokens = d.cache_read_tokens + EXCLUDED.cache_read_tokens,
  cache_write_tokens = d.cache_write_tokens + EXCLUDED.cache_write_tokens,
  tests = d.tests + EXCLUDED.tests,
  tests_first_attempt = d.tests_first_attempt + EXCLUDED.tests_first_attempt,
  tests_passed = d.tests_passed + EXCLUDED.tests_passed;

INSERT INTO stage_days AS d (day, repository_id, stage, bucket, stages)
SELECT {DAY}, r.repository_id, s.name,
  LEAST(80, GREATEST(-20, ceil(ln(GREATEST(
    extract(epoch FROM s.finished_at - s.started_at)::float8, 0.01)) / ln(1.25))))::smallint,
  count(*)
FROM runs r JOIN stages s ON s.run_id = r.run_id
WHERE r.run_id = ANY(ids) AND r.status IN {ENDED} AND s.status IN ('passed', 'failed')
  AND s.started_at IS NOT NULL AND s.finished_at IS NOT NULL
GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (day, repository_id, stage, bucket) DO UPDATE SET stages = d.stages + EXCLUDED.stages;
$$;

CREATE FUNCTION amtp_rollup_run_end() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM amtp_rollup_runs(ARRAY[NEW.run_id]);
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER runs_rollup_on_end AFTER UPDATE OF status ON runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.status NOT IN {ENDED} AND NEW.status IN {ENDED})
    EXECUTE FUNCTION amtp_rollup_run_end();

SELECT amtp_rollup_runs(ARRAY(SELECT run_id FROM runs WHERE status IN {ENDED}));
"""
UNROLLUP = """
DROP TRIGGER runs_rollup_on_end ON runs;
DROP FUNCTION amtp_rollup_run_end();
DROP FUNCTION amtp_rollup_runs(uuid[]);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("repositories", "0005_repository_grants"),
        ("runs", "0012_runs_page_indexes_include_repository"),
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
                "constraints": [
                    models.UniqueConstraint(
                        fields=("day", "repository", "status"), name="run_days_one_per_key"
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
                        fields=("day", "repository", "stage", "bucket"),
                        name="stage_days_one_per_key",
                    )
                ],
            },
        ),
        migrations.RunSQL(ROLLUP, UNROLLUP),
    ]
