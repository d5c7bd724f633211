"""Benchmark the admin dashboard and ``GET /api/costs`` at 1,000,000 runs.

Seeds N runs over 50 repositories the way ``bench_lists.py`` does (a year of runs, 62 s
apart), with a generation run's stages (all of them) of varied durations each, three cost rows per started run and a
verification report of three tests per passed run; builds the daily rollups from them with
``amtp_rollup_runs`` (what migration 0013 does on an existing database) and times that; then
times a run's end with and without its rollup, and loads the dashboard and
``/api/costs`` ``--requests`` times as a superuser and as a viewer of 5 repositories.
Goal: p50 ≤ 150 ms a page.

    .venv/bin/python scripts/bench_dashboard.py [--runs 1000000] [--requests 20]

Uses its own database (amtp_bench_dashboard, recreated) and Valkey DB 12. See
docs/benchmarks.md. Prints ``RATIO`` lines and a table; exits 0 (figures, not assertions).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_lists import (  # noqa: E402
    REPOSITORIES,
    SEED_RUNS,
    clients,
    granted_user,
    percentiles,
    seeded,
)

DB_NAME = "amtp_bench_dashboard"
VALKEY_DB = 12
GOAL_MS = 150.0
RUN_ENDS = 200

SEED_STAGES = """
INSERT INTO stages (stage_id, run_id, name, position, status, attempts, started_at,
  finished_at, error_type, error_message, note)
SELECT gen_random_uuid(), r.run_id, (%(names)s::text[])[p + 1], p,
  CASE WHEN r.status = 'passed' THEN 'passed' WHEN r.status = 'failed' AND p = 2 THEN 'failed'
       WHEN r.status IN ('pending', 'running') THEN 'pending' ELSE 'cancelled' END,
  1, r.started_at, r.started_at + (5 + p * 20 + abs(hashtext(r.run_id::text)) %% 90) * interval '1 second',
  '', '', ''
FROM runs r CROSS JOIN generate_series(0, cardinality(%(names)s::text[]) - 1) p
ORDER BY r.run_id
"""
SEED_COSTS = """
INSERT INTO run_costs (run_id, agent, provider, model, calls, input_tokens, output_tokens,
  cache_read_tokens, cache_write_tokens, cost_usd, created_at)
SELECT r.run_id, a.agent, 'anthropic', 'claude-sonnet-5-5', 3, 30000 + a.k * 1000, 2000,
  10000, 5000, 0.04 + a.k * 0.001, r.created_at
FROM runs r CROSS JOIN (VALUES ('repo_crawler', 1), ('test_case_generator', 2),
  ('test_engineer', 3)) AS a(agent, k)
WHERE r.status <> 'pending'
ORDER BY r.run_id
"""
SEED_REPORTS = """
INSERT INTO artifacts (artifact_id, run_id, kind, schema_id, content, meta, created_at)
SELECT gen_random_uuid(), r.run_id, 'verification_report', 'amtp/verification_report/v1',
  jsonb_build_object('tests', jsonb_build_array(
    jsonb_build_object('status', 'passed', 'attempts', 1),
    jsonb_build_object('status', CASE WHEN abs(hashtext(r.run_id::text)) % 5 = 0 THEN 'healed'
                                      ELSE 'passed' END, 'attempts', 2),
    jsonb_build_object('status', 'failed', 'attempts', 2))),
  '{}'::jsonb, r.finished_at
FROM runs r WHERE r.status = 'passed'
ORDER BY r.run_id
"""
ROLLUP = (
    "SELECT amtp_rollup_runs(ARRAY(SELECT run_id FROM runs "
    "WHERE status IN ('passed', 'failed', 'cancelled')))"
)


def seed(runs: int) -> dict:
    from django.contrib.auth.models import User
    from django.db import connection

    from repositories.models import Repository
    from runs.models import Stage

    Repository.objects.bulk_create(
        Repository(full_name=f"bench/app-{i:02d}") for i in range(REPOSITORIES)
    )
    user = User.objects.create_superuser("bench", "bench@example.test", "bench")
    params = {"runs": runs, "repositories": REPOSITORIES}
    params["names"] = [str(name) for name in Stage.ORDER]
    seconds = {}
    with connection.cursor() as cursor:
        steps = [("runs", SEED_RUNS), ("stages", SEED_STAGES), ("run_costs", SEED_COSTS)]
        steps += [("reports", SEED_REPORTS), ("vacuum analyze", "VACUUM ANALYZE")]
        steps += [("rollup of every ended run", ROLLUP), ("analyze rollups", "ANALYZE")]
        for name, statement in steps:
            start = time.perf_counter()
            cursor.execute(statement, params if "%(" in statement else None)
            seconds[name] = time.perf_counter() - start
        cursor.execute("SELECT count(*) FROM run_days")
        seconds["run_days rows"] = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM stage_days")
        seconds["stage_days rows"] = cursor.fetchone()[0]
    return {"seconds": seconds, "user": user}


def run_ends(rollup: bool) -> float:
    """Mean ms of ending one running run (its own transaction), with its rollup (what
    runs.transitions.run_end adds to the run's row) or without."""
    from django.db import connection, transaction

    from runs import transitions

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE runs SET status = 'running', finished_at = NULL WHERE run_id IN "
            "(SELECT run_id FROM runs WHERE status = 'passed' LIMIT %s)",
            [RUN_ENDS],
        )
        cursor.execute("SELECT run_id FROM runs WHERE status = 'running' LIMIT %s", [RUN_ENDS])
        ids = [row[0] for row in cursor.fetchall()]
    start = time.perf_counter()
    for run_id in ids:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "UPDATE runs SET status = 'passed', finished_at = now() "
                "WHERE run_id = %s AND status = 'running'",
                [run_id],
            )
            if rollup:
                transitions.roll_up([run_id])
    return (time.perf_counter() - start) * 1000 / len(ids)


def measure(client, url: str, requests: int) -> dict:
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}: {response.content[:300]!r}")
    return percentiles(client, url, requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    data = seeded(args.runs, DB_NAME, VALKEY_DB, seed)
    from django.conf import settings

    with_rollup, without = run_ends(True), run_ends(False)
    print(
        f"a run's end: {with_rollup:.2f} ms with its rollup, {without:.2f} ms without "
        f"(mean of {RUN_ENDS}, each its own transaction)"
    )
    settings.DEBUG = False
    viewer, _granted = granted_user(5)
    rows = []
    for who, user in (("superuser", data["user"]), ("viewer of 5 repositories", viewer)):
        admin, api = clients(user)
        for name, client, url in (
            ("admin dashboard", admin, "/admin/dashboard/"),
            ("API costs, 30 days", api, "/api/costs"),
        ):
            row = {"name": f"{name} ({who})", **measure(client, url, args.requests)}
            ratio = row["p50"] / GOAL_MS
            print(
                f"RATIO dashboard, {row['name']}: {ratio:.2f} (p50 "
                f"{row['p50']:.1f} ms, p95 {row['p95']:.1f} ms; goal ≤ 1.00, i.e. p50 ≤ "
                f"{GOAL_MS:.0f} ms)",
                flush=True,
            )
            rows.append(row)
    print(f"\n{args.runs:,} runs; load average {os.getloadavg()[0]:.1f}\n")
    print("| page | p50 ms | p95 ms |\n| --- | ---: | ---: |")
    for row in rows:
        print(f"| {row['name']} | {row['p50']:.1f} | {row['p95']:.1f} |")


if __name__ == "__main__":
    main()
