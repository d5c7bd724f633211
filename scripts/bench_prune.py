"""Benchmark ``manage.py prune`` at 1,000,000 runs, and the lists while it runs.

Seeds the data set of ``bench_lists.py`` (runs over 50 repositories and about a year, five
stages each, artifacts, approvals; ``VACUUM ANALYZE``), puts every repository on a local host
whose open pull requests are one run in 20 of those with a PR, then prunes everything older
than ``--older-than`` days (half the runs by default) in batches of ``--batch-size``, while a
second connection reads the newest page of the run list (the API's and the admin's first
query) every 50 ms. Prints the runs removed per second, the longest batch (the longest any
row lock is held), and the list page's p50 and worst time during the prune against before.

    .venv/bin/python scripts/bench_prune.py [--runs 1000000] [--older-than 180] [--batch-size 1000]

Uses its own PostgreSQL database (amtp_bench_prune, recreated) and Valkey DB 8, and starts the
embedded devstack if it is not running. See docs/benchmarks.md. Exits 0 (figures).
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

DB_NAME = "amtp_bench_prune"
VALKEY_DB = 8
# The lists must not wait for the prune: their first page keeps the lists' goal meanwhile.
GOAL_LIST_MS = 150.0
LIST_PAGE = (
    "SELECT run_id, repo_full_name, status, created_at FROM runs "
    "ORDER BY created_at DESC, run_id DESC LIMIT 50"
)


def local_host(folder: Path, open_numbers: list[int]) -> str:
    """A git repository whose pull-request records say ``open_numbers`` are open."""
    import json

    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    (folder / ".git" / "amtp").mkdir()
    pulls = [{"number": n, "head_branch": f"amtp/run-{n}"} for n in open_numbers]
    (folder / ".git" / "amtp" / "pulls.json").write_text(json.dumps({"version": 1, "pulls": pulls}))
    return str(folder)


def list_reader(stop: threading.Event, timings: list[float]) -> None:
    """The list's first page, read every 50 ms on a connection of its own."""
    from django.db import connection

    try:
        while not stop.is_set():
            started = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(LIST_PAGE)
                cursor.fetchall()
            timings.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
    finally:
        connection.close()


def sample_page(n: int) -> list[float]:
    timings: list[float] = []
    stop = threading.Event()
    reader = threading.Thread(target=list_reader, args=(stop, timings))
    reader.start()
    time.sleep(n * 0.05)
    stop.set()
    reader.join()
    return timings


def table_sizes() -> str:
    """Each big table's size with its indexes and TOAST."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, pg_size_pretty(pg_total_relation_size(relid)) "
            "FROM pg_statio_user_tables ORDER BY pg_total_relation_size(relid) DESC LIMIT 5"
        )
        return ", ".join(f"{name} {size}" for name, size in cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--older-than", type=int, default=180)
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args()
    from bench_lists import seeded

    data = seeded(args.runs, DB_NAME, VALKEY_DB)
    print(f"seeded {data['sizes']}", flush=True)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from repositories.models import Repository

    settings.DEBUG = False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pr_number FROM runs WHERE abs(hashtext(run_id::text)) % 20 = 0 "
            "AND pr_number IS NOT NULL"
        )
        open_numbers = [row[0] for row in cursor.fetchall()]
    folder = Path(tempfile.mkdtemp(prefix="amtp-bench-prune-"))
    settings.AMTP_VERIFY_EVIDENCE_DIR = folder / "evidence"
    path = local_host(folder / "repo", open_numbers)
    Repository.objects.update(host="local", local_path=path)
    print(f"sizes before: {table_sizes()}", flush=True)
    before = sample_page(40)

    timings: list[float] = []
    stop = threading.Event()
    reader = threading.Thread(target=list_reader, args=(stop, timings))
    reader.start()
    out = io.StringIO()
    started = time.perf_counter()
    call_command(
        "prune",
        "--older-than",
        str(args.older_than),
        "--batch-size",
        str(args.batch_size),
        stdout=out,
    )
    seconds = time.perf_counter() - started
    stop.set()
    reader.join()

    lines = out.getvalue().splitlines()
    removed = sum(
        int(line.split(" removed ")[1].split()[0]) for line in lines if ": removed " in line
    )
    longest = max(
        float(line.split("longest ")[1].split(" ms")[0]) for line in lines if "longest " in line
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM runs")
        left = cursor.fetchone()[0]
    print(lines[0])
    print(lines[-1])
    print(f"sizes after (before autovacuum reuses the space): {table_sizes()}")
    print(
        f"prune: {removed:,} runs removed in {seconds:.1f} s ({removed / seconds:,.0f} runs/s, "
        f"batches of {args.batch_size}); {left:,} left; longest batch {longest:.0f} ms"
    )
    print(
        f"list page (newest 50): before p50 {statistics.median(before):.1f} ms, max "
        f"{max(before):.1f} ms; during p50 {statistics.median(timings):.1f} ms, max "
        f"{max(timings):.1f} ms over {len(timings)} reads"
    )
    print(f"RATIO prune_runs_per_s: {removed / seconds:,.0f} (reported)")
    print(f"RATIO prune_longest_batch_ms: {longest:.0f} (reported)")
    during = statistics.median(timings)
    print(
        f"RATIO prune_list_p50_ms: {during:.1f} (goal ≤ {GOAL_LIST_MS:.0f} ms, the lists' own: "
        f"{'met' if during <= GOAL_LIST_MS else 'NOT MET'})"
    )


if __name__ == "__main__":
    main()
