"""``amtp_rollup_runs(ids, sign)``: with ``sign`` -1 it takes ended runs back out of the daily
rollups (``run_days``, ``stage_days``), and rows left counting no run are deleted. ``manage.py
prune`` calls it for each batch it removes, in the batch's transaction, so the dashboard and
``/api/costs`` count the runs that exist. ``sign`` defaults to 1: adding, as before."""

from django.db import migrations

DAY = "(COALESCE(r.finished_at, now()) AT TIME ZONE 'UTC')::date"
ENDED = "('passed', 'failed', 'cancelled')"


def rollup(signed: bool) -> str:
    """0016's function; ``signed``: each figure times ``sign``, and emptied rows deleted."""
    s = "sign * " if signed else ""
    head = "ids uuid[], sign integer DEFAULT 1" if signed else "ids uuid[]"
    # Only the runs' repositories' rows (and stage_days' all-repository ones) are looked at.
    theirs = "repository_id IN (SELECT repository_id FROM runs WHERE run_id = ANY(ids))"
    tidy = (
        f"DELETE FROM run_days WHERE runs <= 0 AND {theirs};\n"
        f"DELETE FROM stage_days WHERE stages <= 0 AND ({theirs} OR repository_id IS NULL);"
        if signed
        else ""
    )
    return f"""
CREATE FUNCTION amtp_rollup_runs({head}) RETURNS void LANGUAGE sql AS $$
INSERT INTO run_days AS d (day, repository_id, status, runs, duration_s, cost_usd,
  runs_cost_unknown, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tests,
  tests_first_attempt, tests_passed)
SELECT {DAY}, r.repository_id, r.status, {s}count(*),
  {s}COALESCE(sum(extract(epoch FROM r.finished_at - r.started_at)), 0),
  {s}COALESCE(sum(c.cost) FILTER (WHERE c.unknown = 0), 0),
  {s}count(*) FILTER (WHERE c.unknown > 0),
  {s}COALESCE(sum(c.input), 0), {s}COALESCE(sum(c.output), 0), {s}COALESCE(sum(c.read), 0),
  {s}COALESCE(sum(c.write), 0), {s}COALESCE(sum(v.tests), 0), {s}COALESCE(sum(v.first), 0),
  {s}COALESCE(sum(v.passed), 0)
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
SELECT day, repository_id, stage, bucket, {s}count(*)
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
{tidy}
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0023_rollups_written_by_run_end"),
    ]

    operations = [
        migrations.RunSQL(
            "DROP FUNCTION amtp_rollup_runs(uuid[]);" + rollup(signed=True),
            "DROP FUNCTION amtp_rollup_runs(uuid[], integer);" + rollup(signed=False),
        ),
    ]
