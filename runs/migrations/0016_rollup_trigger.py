"""Costs per run (``run_costs``) and the daily rollups (``run_days``, ``stage_days``), kept by
PostgreSQL: ``amtp_rollup_runs(ids)`` adds ended runs to them (set-based: the backfill below
and ``scripts/bench_dashboard.py`` use it for many runs at once), and a deferred trigger calls it
for each run whose status becomes terminal, at commit, when its stages, costs and verification
report are all in place, whichever code ended it (``runs.outcome``, reconcile, a cancel).
Rows are inserted in key order, so concurrent run ends cannot deadlock on them."""

from django.db import migrations

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
SELECT day, repository_id, stage, bucket, count(*)
FROM (
  SELECT {DAY} AS day, r.repository_id, s.name AS stage,
    LEAST(80, GREATEST(-20, ceil(ln(GREATEST(
      extract(epoch FROM s.finished_at - s.started_at)::float8, 0.01)) / ln(1.25))))::smallint
      AS bucket
  FROM runs r JOIN stages s ON s.run_id = r.run_id
  WHERE r.run_id = ANY(ids) AND r.status IN {ENDED} AND s.status IN ('passed', 'failed')
    AND s.started_at IS NOT NULL AND s.finished_at IS NOT NULL
) ended
-- per repository, and for all of them (repository_id NULL)
GROUP BY GROUPING SETS ((day, repository_id, stage, bucket), (day, stage, bucket))
ORDER BY day, repository_id NULLS FIRST, stage, bucket
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
    # Apart from 0013: the unique constraint of stage_days (NULLS NOT DISTINCT) is created at
    # the end of the migration that creates the table, after any RunSQL in it.
    dependencies = [
        ("runs", "0015_costs_and_rollups"),
    ]

    operations = [
        migrations.RunSQL(ROLLUP, UNROLLUP),
    ]
