"""Benchmark the admin lists and ``GET /api/runs`` at 1,000,000 runs.

Seeds N runs with PostgreSQL's own ``INSERT ... SELECT generate_series`` (five stages a run;
artifacts by outcome: five for a passed run, two for a failed one, one otherwise; an approval
for one run in 40 and for every running run; an audit entry per decision and per cancelled
run), runs ``VACUUM ANALYZE`` (autovacuum's job in production), then measures each list page
through Django's test client: a logged-in superuser for the admin, a bearer token for the API.
Per page: the queries of one request, p50 and p95 over ``--requests`` requests, and the
indexes its queries' plans use. Goal per page: at most 10 queries and p50 ≤ 150 ms. Every
filter the run list offers has a page, so the closing table of scans per index of ``runs``
shows which indexes the lists need.

    .venv/bin/python scripts/bench_lists.py [--runs 1000000] [--requests 20] [--grants 5]

``--grants N`` measures as a staff user who may see only N of the 50 repositories (a viewer
grant on each, plus the global audit-trail permission), with an API token of theirs, instead
of a superuser: every list is then narrowed by ``repositories.access``.

Uses its own PostgreSQL database (amtp_bench_lists, recreated) and Valkey DB 11, and starts
the embedded devstack if it is not running; dev data is never touched. See docs/benchmarks.md.
Prints one ``RATIO`` line per page and a markdown table; exits 0 (figures, not assertions).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make amtp_site, runs importable

DB_NAME = "amtp_bench_lists"
VALKEY_DB = 11
REPOSITORIES = 50
GOAL_QUERIES, GOAL_MS = 10, 150.0
PER_PAGE = 50

SEED_RUNS = """
INSERT INTO runs (run_id, repository_id, repo_full_name, ref, commit_sha, base_branch,
  target_url, base_sha, depth_level, target_framework, status, trigger, requested_by,
  request_key, head_branch, pr_number, pr_url, error_type, error_message, created_at,
  started_at, finished_at)
SELECT gen_random_uuid(), r.id, r.full_name,
  CASE WHEN g %% 3 = 0 THEN 'main' ELSE 'feature/change-' || (g %% 5000) END,
  left(md5(g::text) || md5((g + 1)::text), 40), 'main', '', left(md5((g + 2)::text), 40),
  (ARRAY['smoke', 'core', 'standard', 'deep'])[1 + (g * 13) %% 4],
  CASE WHEN (g * 17) %% 10 < 8 THEN 'playwright' ELSE 'maestro' END,
  s.status, s.trigger,
  CASE WHEN s.trigger = 'webhook' THEN 'github:push'
       ELSE (ARRAY['alice', 'bob', 'carol', 'dave', 'ci-bot'])[1 + g %% 5] END,
  NULL,
  CASE WHEN s.status = 'passed' THEN 'amtp/tests-' || g ELSE '' END,
  CASE WHEN s.status = 'passed' THEN g END,
  CASE WHEN s.status = 'passed' THEN 'https://github.com/' || r.full_name || '/pull/' || g
       ELSE '' END,
  CASE WHEN s.status = 'failed' THEN 'StaleBaseBranch' ELSE '' END,
  CASE WHEN s.status = 'failed' THEN 'base branch ''main'' moved' ELSE '' END,
  s.t, CASE WHEN s.status <> 'pending' THEN s.t + interval '1 second' END,
  CASE WHEN s.status NOT IN ('pending', 'running') THEN s.t + interval '70 seconds' END
FROM (
  SELECT g, g %% %(repositories)s AS ri,
    -- two runs per timestamp: the page order needs its tie-break on the key
    now() - (g / 2) * interval '62 seconds' AS t,
    CASE WHEN g <= 5 THEN 'pending' WHEN g <= 20 THEN 'running'
         WHEN (g::bigint * 7919) %% 1000 < 700 THEN 'passed' WHEN (g::bigint * 7919) %% 1000 < 900 THEN 'failed'
         ELSE 'cancelled' END AS status,
    CASE WHEN (g * 31) %% 20 < 10 THEN 'api' WHEN (g * 31) %% 20 < 17 THEN 'webhook'
         WHEN (g * 31) %% 20 < 19 THEN 'form' ELSE 'cli' END AS trigger
  FROM generate_series(1, %(runs)s) g
) s
JOIN (SELECT row_number() OVER (ORDER BY id) - 1 AS ri, id, full_name FROM repositories) r
  USING (ri)
"""

SEED_STAGES = """
INSERT INTO stages (stage_id, run_id, name, position, status, attempts, started_at,
  finished_at, error_type, error_message, note)
SELECT gen_random_uuid(), r.run_id, (%(names)s::text[])[p + 1], p,
  CASE WHEN r.status = 'passed' THEN 'passed'
       WHEN r.status = 'failed' THEN CASE WHEN p < 2 THEN 'passed' WHEN p = 2 THEN 'failed'
                                          ELSE 'cancelled' END
       WHEN r.status = 'cancelled' THEN CASE WHEN p = 0 THEN 'passed' ELSE 'cancelled' END
       WHEN r.status = 'running' THEN CASE WHEN p = 0 THEN 'passed' WHEN p = 1 THEN 'running'
                                           ELSE 'pending' END
       ELSE 'pending' END,
  1, r.started_at, r.finished_at, '', '', ''
FROM runs r CROSS JOIN generate_series(0, 4) p
ORDER BY r.run_id  -- the (run_id, ...) indexes fill in order, not at random
"""

SEED_ARTIFACTS = """
INSERT INTO artifacts (artifact_id, run_id, kind, schema_id, content, meta, created_at)
SELECT gen_random_uuid(), r.run_id, a.kind, 'amtp/' || a.kind || '/v1',
  '{"bench": true}'::jsonb, '{}'::jsonb, r.created_at + a.k * interval '10 seconds'
FROM runs r JOIN (VALUES
  ('repo_crawler_output', 1, '{passed,failed,cancelled,running}'::text[]),
  ('test_case_generator_output', 2, '{passed,failed}'), ('test_engineer_output', 3, '{passed}'),
  ('verification_report', 4, '{passed}'), ('pull_request', 5, '{passed}'),
  ('failure_report', 6, '{failed}')
) AS a(kind, k, statuses) ON r.status = ANY(a.statuses)
ORDER BY r.run_id
"""

SEED_APPROVALS = """
INSERT INTO approvals (approval_id, run_id, stage_id, decision, approver, comment, decided_by,
  decided_at, decision_comment, created_at)
SELECT gen_random_uuid(), r.run_id, s.stage_id,
  CASE WHEN r.status = 'running' THEN 'pending' WHEN r.status = 'passed' THEN 'approved'
       ELSE 'rejected' END,
  CASE WHEN r.pr_number % 2 = 0 THEN 'branch-protection' ELSE 'policy' END,
  'Protected branch update failed: 1 approving review is required.',
  CASE WHEN r.status = 'running' THEN '' ELSE 'alice' END,
  CASE WHEN r.status <> 'running' THEN r.created_at + interval '1 hour' END,
  CASE WHEN r.status IN ('running', 'passed') THEN '' ELSE 'not this week' END,
  r.created_at + interval '60 seconds'
FROM runs r JOIN stages s ON s.run_id = r.run_id AND s.name = 'create_pull_request'
WHERE r.status = 'running' OR abs(hashtext(r.run_id::text)) % 40 = 0
"""

SEED_AUDIT = """
INSERT INTO django_admin_log (action_time, user_id, content_type_id, object_id, object_repr,
  action_flag, change_message)
SELECT decided_at, %(user)s, %(approval_type)s, approval_id::text, 'approval ' || approval_id,
  2, initcap(decision) || ' (via admin, alice)'
FROM approvals WHERE decision <> 'pending'
UNION ALL
SELECT finished_at, %(user)s, %(run_type)s, run_id::text, repo_full_name || '@' || ref,
  2, 'Cancelled (via api, alice)'
FROM runs WHERE status = 'cancelled'
"""


def seed(runs: int) -> dict:
    """The data set; returns the table sizes and the seconds each step took."""
    from django.contrib.auth.models import User
    from django.contrib.contenttypes.models import ContentType
    from django.db import connection

    from approvals.models import Approval
    from repositories.models import Repository
    from runs.models import Run, Stage

    Repository.objects.bulk_create(
        Repository(full_name=f"bench/app-{i:02d}") for i in range(REPOSITORIES)
    )
    user = User.objects.create_superuser("bench", "bench@example.test", "bench")
    params = {
        "runs": runs,
        "repositories": REPOSITORIES,
        # Five stages a run, as when the table was measured: a generation run's without
        # BootApp and ExploreApp (whose rows came later). The approvals join on the last.
        "names": [str(n) for n in Stage.ORDER if n not in ("boot_app", "explore_app")],
        "user": user.pk,
        "approval_type": ContentType.objects.get_for_model(Approval).pk,
        "run_type": ContentType.objects.get_for_model(Run).pk,
    }
    seconds = {}
    with connection.cursor() as cursor:
        for table, statement in [
            ("runs", SEED_RUNS),
            ("stages", SEED_STAGES),
            ("artifacts", SEED_ARTIFACTS),
            ("approvals", SEED_APPROVALS),
            ("django_admin_log", SEED_AUDIT),
        ]:
            start = time.perf_counter()
            cursor.execute(statement, params if "%(" in statement else None)
            seconds[table] = time.perf_counter() - start
        start = time.perf_counter()
        cursor.execute("VACUUM ANALYZE")  # autovacuum's work: statistics and visibility map
        seconds["vacuum analyze"] = time.perf_counter() - start
        sizes = {}
        for table in ("runs", "stages", "artifacts", "approvals", "django_admin_log"):
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 (our own names)
            sizes[table] = cursor.fetchone()[0]
    if empty := [table for table, count in sizes.items() if not count]:
        # A page measured on an empty table says nothing: the seed no longer fits the schema.
        raise SystemExit(f"the seed left {', '.join(empty)} empty: fix its statements")
    return {"sizes": sizes, "seconds": seconds, "user": user}


def seeded(runs: int, database: str, valkey_db: int, seed_with=seed) -> dict:
    """Point Django at a scratch database and Valkey DB of the benchmark's own, fill it with
    ``seed_with(runs)`` and say how long each step took."""
    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(database=database, valkey_db=valkey_db)
    started = time.perf_counter()
    data = seed_with(runs)
    steps = ", ".join(f"{k} {v:,.1f}" for k, v in data["seconds"].items())
    print(f"seeded {runs:,} runs in {time.perf_counter() - started:.0f} s ({steps})", flush=True)
    return data


SMALL_TABLES = {"django_session", "auth_user", "api_tokens", "django_content_type", "repositories"}


def plan_indexes(queries: list[dict]) -> str:
    """The indexes (and sequential scans) the plans of the request's SELECTs use, leaving out
    the small tables (session, user, token, repositories)."""
    from django.db import connection

    found = []
    with connection.cursor() as cursor:
        for query in queries:
            if not query["sql"].startswith("SELECT"):
                continue
            cursor.execute("EXPLAIN " + query["sql"])
            plan = "\n".join(row[0] for row in cursor.fetchall())
            found += re.findall(r"Index (?:Only )?Scan (?:Backward )?using (\w+)", plan)
            found += re.findall(r"Bitmap Index Scan on (\w+)", plan)
            found += [
                f"SEQ SCAN {table}"
                for table in re.findall(r"Seq Scan on (\w+)", plan)
                if table not in SMALL_TABLES
            ]
    found = [name for name in found if not name.startswith(tuple(SMALL_TABLES))]
    return ", ".join(dict.fromkeys(found)) or "-"


def percentiles(client, url: str, requests: int) -> dict:
    """p50 and p95 in ms of ``requests`` GETs of ``url``, one after the other."""
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return {"p50": statistics.median(times), "p95": p95}


def measure(client, url: str, requests: int) -> dict:
    """Queries of one request, p50/p95 of ``requests`` more, the slowest query's indexes."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    reset_queries()  # a full query log (9,000 entries) would hide this request's queries
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}: {response.content[:500]!r}")
    queries = list(ctx.captured_queries)  # read now: the next request clears the log
    return {
        "queries": len(queries),
        **percentiles(client, url, requests),
        "db_ms": sum(float(q["time"]) for q in queries) * 1000,
        "indexes": plan_indexes(queries),
        "response": response,
    }


def pages(client, api, data: dict) -> list[tuple[str, object, str]]:
    """(name, client, url) of every page measured, at this data set's size (what the caller
    sees of it: ``data["granted"]`` repositories only, when set)."""
    from runs.models import Run

    runs = data["sizes"]["runs"]
    visible = Run.objects.all()
    if data.get("granted"):
        visible = visible.filter(repository_id__in=data["granted"])
        runs = runs * len(data["granted"]) // REPOSITORIES
    deep_page = max(2, min(10_000, runs // PER_PAGE // 2))
    deep_offset = (deep_page - 1) * PER_PAGE
    sample = visible.order_by("-created_at")[runs // 3]
    repository = sample.repository
    cursor = None
    for _ in range(49):  # walk to page 50 the way a client does
        cursor = api.get(
            "/api/runs", {"limit": PER_PAGE, **({"cursor": cursor} if cursor else {})}
        ).json()["next_cursor"]
    return [
        ("admin runs, first page", client, "/admin/runs/run/"),
        ("admin runs, filtered (status)", client, "/admin/runs/run/?status__exact=failed"),
        (
            "admin runs, filtered (repository + trigger)",
            client,
            f"/admin/runs/run/?repository__id__exact={repository.pk}&trigger__exact=cli",
        ),
        (
            "admin runs, filtered (framework)",
            client,
            "/admin/runs/run/?target_framework__exact=maestro",
        ),
        ("admin runs, filtered (trigger)", client, "/admin/runs/run/?trigger__exact=cli"),
        ("admin runs, filtered (depth)", client, "/admin/runs/run/?depth_level__exact=deep"),
        ("admin runs, searched (repository)", client, f"/admin/runs/run/?q={repository.full_name}"),
        (
            "admin runs, searched (run id prefix)",
            client,
            f"/admin/runs/run/?q={str(sample.run_id)[:8]}",
        ),
        (f"admin runs, deep page (p={deep_page})", client, f"/admin/runs/run/?p={deep_page}"),
        ("admin artifacts, first page", client, "/admin/runs/artifact/"),
        (
            "admin artifacts, filtered (kind)",
            client,
            "/admin/runs/artifact/?kind__exact=failure_report",
        ),
        ("admin approvals, pending queue", client, "/admin/approvals/approval/"),
        ("admin approvals, all", client, "/admin/approvals/approval/?decision=all"),
        ("admin audit trail, first page", client, "/admin/admin/logentry/"),
        ("API runs, first page", api, f"/api/runs?limit={PER_PAGE}"),
        ("API runs, filtered (status)", api, f"/api/runs?limit={PER_PAGE}&status=failed"),
        ("API runs, filtered (trigger)", api, f"/api/runs?limit={PER_PAGE}&trigger=cli"),
        (
            "API runs, filtered (repository + framework)",
            api,
            f"/api/runs?limit={PER_PAGE}&repository={repository.full_name}&framework=maestro",
        ),
        ("API runs, cursor page 50", api, f"/api/runs?limit={PER_PAGE}&cursor={cursor}"),
        (
            f"API runs, offset {deep_offset:,}",
            api,
            f"/api/runs?limit={PER_PAGE}&offset={deep_offset}",
        ),
    ]


def granted_user(grants: int):
    """A staff user with a viewer grant on ``grants`` repositories (and the audit-trail
    permission, global), and the ids of those repositories."""
    from django.contrib.auth.models import Permission, User

    from repositories.models import Repository, RepositoryGrant

    user = User.objects.create_user("bench-viewer", password=None, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_logentry"))
    repositories = list(Repository.objects.order_by("full_name")[:grants])
    RepositoryGrant.objects.bulk_create(
        RepositoryGrant(repository=r, user=user, role="viewer") for r in repositories
    )
    return User.objects.get(pk=user.pk), [r.pk for r in repositories]


def clients(user):
    from django.test import Client

    from access import auth

    admin = Client()
    admin.force_login(user)
    secret = auth.api_token_create(
        name="bench", scopes=[auth.Scope.RUNS_READ], actor=None, user=user
    )[1]
    return admin, Client(headers={"Authorization": f"Bearer {secret}"})


INDEX_USE = """
SELECT s.indexrelname, s.idx_scan, pg_relation_size(s.indexrelid) / 1048576, i.indisunique
FROM pg_stat_user_indexes s JOIN pg_index i ON i.indexrelid = s.indexrelid
WHERE s.relname = %s ORDER BY s.idx_scan DESC, s.indexrelname
"""


def reset_index_use() -> None:
    """Zero the scan counters, so that what print_index_use shows is the lists' own use."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_reset()")


def print_index_use(table: str) -> None:
    """Scans and size of each index of ``table`` since reset_index_use: an index no page
    scans costs its size and a write per insert for nothing (a unique one still enforces)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # this backend's pending counts
        cursor.execute(INDEX_USE, [table])
        found = cursor.fetchall()
    print()
    print(f"| index of {table} | scans | MiB | unique |")
    print("| --- | ---: | ---: | --- |")
    for name, scans, mib, unique in found:
        print(f"| {name} | {scans:,} | {mib:,} | {'yes' if unique else ''} |")
    print()


def report(rows: list[dict], data: dict, args) -> None:
    sizes = data["sizes"]
    print()
    print(
        f"{sizes['runs']:,} runs, {sizes['stages']:,} stages, {sizes['artifacts']:,} artifacts, "
        f"{sizes['approvals']:,} approvals, {sizes['django_admin_log']:,} audit entries; "
        f"{args.requests} requests a page; load average {os.getloadavg()[0]:.1f}"
    )
    print()
    print(
        "| page | queries | p50 ms | p95 ms | of it in SQL (one request) | indexes used | goal met |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for row in rows:
        print(
            f"| {row['name']} | {row['queries']} | {row['p50']:.1f} | {row['p95']:.1f} | "
            f"{row['db_ms']:.1f} | "
            f"{row['indexes']} | {'yes' if row['met'] else '**no**'} |"
        )
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("runs", "artifacts", "approvals"):
            cursor.execute(
                "SELECT pg_table_size(%s) / 1048576, pg_indexes_size(%s) / 1048576", [table, table]
            )
            heap, indexes = cursor.fetchone()
            print(f"{table}: table {heap:,} MiB, indexes {indexes:,} MiB")
    print_index_use("runs")
    met = sum(row["met"] for row in rows)
    print()
    print(f"{met} of {len(rows)} pages within ≤ {GOAL_QUERIES} queries and p50 ≤ {GOAL_MS:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page")
    parser.add_argument(
        "--grants",
        type=int,
        default=0,
        help="measure as a user who may see this many repositories (0: a superuser)",
    )
    args = parser.parse_args()
    data = seeded(args.runs, DB_NAME, VALKEY_DB)
    from django.conf import settings

    settings.DEBUG = False  # as deployed: no query log on every cursor
    if args.grants:
        data["user"], data["granted"] = granted_user(args.grants)
        print(
            f"as {data['user'].username}: a viewer of {args.grants} of {REPOSITORIES} repositories"
        )
    reset_index_use()
    admin, api = clients(data["user"])
    rows = []
    for name, client, url in pages(admin, api, data):
        row = {"name": name, **measure(client, url, args.requests)}
        row["met"] = row["queries"] <= GOAL_QUERIES and row["p50"] <= GOAL_MS
        ratio = max(row["queries"] / GOAL_QUERIES, row["p50"] / GOAL_MS)
        print(
            f"RATIO lists, {name}: {ratio:.2f} ({row['queries']} queries, p50 {row['p50']:.1f} "
            f"ms, p95 {row['p95']:.1f} ms: {'met' if row['met'] else 'NOT MET'}; goal ≤ 1.00, "
            f"i.e. ≤ {GOAL_QUERIES} queries and p50 ≤ {GOAL_MS:.0f} ms)",
            flush=True,
        )
        rows.append(row)
    report(rows, data, args)


if __name__ == "__main__":
    main()
