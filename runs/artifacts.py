"""Storing a stage's artifact with its ``activity_idempotency`` row.

A run has one artifact of each kind (``artifacts_one_per_run_and_kind``). The first attempt to
store it wins; a later or concurrent attempt gets that one back, and its own idempotency key is
recorded for it too. Both rows go in with one statement: one round trip, and atomic without a
transaction of its own (so it also runs inside the caller's, e.g. under the run's row lock).
The tokens and cost its meta reports (``runs.costs``) go in with the artifact, only when this
statement inserted it, so a retry never counts an agent's usage twice; a failed attempt's are
added by ``spent_record``.
"""

from __future__ import annotations

import json

from django.db import connection

from amtp_site import metrics, rows
from runs import costs
from runs.models import ActivityIdempotency, Artifact, ArtifactKind, Run

# The cost rows of an invocation (``runs.costs.cost_rows``), added to the run's: an agent and
# model's row sums every attempt that spent, the failed ones too (an unknown cost stays
# unknown: NULL plus anything is NULL).
_PRICE = """INSERT INTO run_costs (run_id, agent, provider, model, calls, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, created_at)
    SELECT %(run_id)s, c.agent, c.provider, c.model, c.calls, c.input_tokens, c.output_tokens,
           c.cache_read_tokens, c.cache_write_tokens, c.cost_usd, now()
    FROM {source}jsonb_to_recordset(%(costs)s::jsonb) AS c(
        agent text, provider text, model text, calls int, input_tokens bigint,
        output_tokens bigint, cache_read_tokens bigint, cache_write_tokens bigint,
        cost_usd numeric)
    ON CONFLICT (run_id, agent, model) DO UPDATE SET
        calls = run_costs.calls + EXCLUDED.calls,
        input_tokens = run_costs.input_tokens + EXCLUDED.input_tokens,
        output_tokens = run_costs.output_tokens + EXCLUDED.output_tokens,
        cache_read_tokens = run_costs.cache_read_tokens + EXCLUDED.cache_read_tokens,
        cache_write_tokens = run_costs.cache_write_tokens + EXCLUDED.cache_write_tokens,
        cost_usd = run_costs.cost_usd + EXCLUDED.cost_usd"""
# Inserted, or, when an earlier attempt stored this run's artifact of this kind, that one
# kept; either way the key names the artifact kept.
_STORE = f"""
WITH new AS (
    INSERT INTO artifacts (artifact_id, run_id, kind, schema_id, content, meta, created_at)
    VALUES (%(artifact_id)s, %(run_id)s, %(kind)s, %(schema_id)s, %(content)s::jsonb,
            %(meta)s::jsonb, now())
    ON CONFLICT DO NOTHING
    RETURNING artifact_id, created_at
), kept AS (
    SELECT artifact_id, created_at FROM new
    UNION ALL
    SELECT artifact_id, created_at FROM artifacts
    WHERE run_id = %(run_id)s AND kind = %(kind)s AND NOT EXISTS (SELECT FROM new)
), recorded AS (
    INSERT INTO activity_idempotency (idem_key, run_id, activity_name, result, created_at)
    SELECT %(key)s, %(run_id)s, %(activity)s,
           jsonb_build_object('artifact_id', artifact_id::text), now()
    FROM kept
    ON CONFLICT DO NOTHING
), priced AS (
    {_PRICE.format(source="new, ")}
)
SELECT artifact_id, created_at FROM kept
"""


def store(
    run: Run, kind: str, schema_id: str, content: dict, meta: dict, key: str, activity: str
) -> Artifact:
    """The run's artifact of ``kind``: this one, new, or the one an earlier or concurrent
    attempt stored first; ``key`` (the attempt's idempotency key) is recorded for it."""
    artifact = Artifact(run=run, kind=kind, schema_id=schema_id, content=content, meta=meta)
    cost_rows = costs.cost_rows(meta)
    params = {
        "artifact_id": artifact.artifact_id,
        "run_id": run.run_id,
        "kind": kind,
        "schema_id": schema_id,
        "content": json.dumps(content),
        "meta": json.dumps(meta),
        "key": key,
        "activity": activity,
        "costs": json.dumps(cost_rows),
    }
    with connection.cursor() as cursor:
        cursor.execute(_STORE, params)
        row = cursor.fetchone()
    if row is None:
        # A concurrent attempt committed it after this statement began, so the statement
        # neither inserted nor saw it: find it now, and record the key for it.
        artifact = Artifact.objects.get(run=run, kind=kind)
        record(run, key, activity, str(artifact.artifact_id))
        return artifact
    if row[0] != artifact.artifact_id:  # an earlier one was kept (the key is recorded for it)
        return Artifact.objects.get(pk=row[0])
    artifact.created_at = row[1]
    rows.mark_stored(artifact)
    _count(meta, cost_rows)
    if kind == ArtifactKind.VERIFICATION_REPORT:
        metrics.verification(content)
    return artifact


def spent_record(run_id: str, spent: dict) -> None:
    """What a failed attempt's agent spent (its error's ``spent``: provider, model, usage),
    added to the run's cost and the metrics. Called once per failed attempt; a retry that
    then succeeds adds its own through ``store``."""
    cost_rows = costs.cost_rows(spent)
    with connection.cursor() as cursor:
        cursor.execute(_PRICE.format(source=""), {"run_id": run_id, "costs": json.dumps(cost_rows)})
    _count(spent, cost_rows)


def _count(meta: dict, cost_rows: list[dict]) -> None:
    """The tokens and cost just recorded, in the metrics (once: by the call that recorded)."""
    metrics.llm_usage(meta)
    for row in cost_rows:
        if row["cost_usd"] is not None:
            metrics.llm_cost(row["agent"], row["model"], float(row["cost_usd"]))


def record(run: Run, key: str, activity: str, artifact_id: str) -> None:
    """The attempt's idempotency row for an artifact stored already (kept if present)."""
    ActivityIdempotency.objects.bulk_create(
        [
            ActivityIdempotency(
                idem_key=key, run=run, activity_name=activity, result={"artifact_id": artifact_id}
            )
        ],
        ignore_conflicts=True,
    )
