"""Throughput with 1, 2 and 4 worker processes on one Temporal server.

For each count N: N ``manage.py run_worker`` processes (each with its own pool of
AMTP_WORKER_PROCESSES agent processes, as in production) poll one fresh task queue; R runs
(offline provider, the small demo repository, one local repository per run so the
per-repository limits do not serialise them) are started at once with ``run_create``;
throughput is R over the time from the first start to the last run finished.

    .venv/bin/python scripts/bench_workers.py [--runs 8] [--workers 1,2,4]

Uses its own PostgreSQL database (amtp_bench_workers, recreated), Valkey DB 9 (flushed) and
task queues, and starts the embedded devstack if it is not running. On a machine with fewer
cores than agent processes the figure measures CPU contention, not the design: see
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "amtp_bench_workers"
VALKEY_DB = 9


def start_workers(count: int, task_queue: str) -> list[subprocess.Popen]:
    env = {**os.environ, "TEMPORAL_TASK_QUEUE": task_queue}
    return [
        subprocess.Popen(
            [sys.executable, "manage.py", "run_worker"],
            cwd=ROOT,
            env=env,
            start_new_session=True,  # its own process group: stopped with its agent processes
        )
        for _ in range(count)
    ]


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        os.killpg(worker.pid, signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def wait_for_pollers(task_queue: str, count: int, timeout: float = 120) -> None:
    """Until ``count`` distinct workers poll the queue's workflow tasks."""
    from amtp_site import temporal

    def pollers() -> int:
        return len(temporal.call(lambda client: temporal.task_queue_pollers(client, task_queue)))

    deadline = time.monotonic() + timeout
    while pollers() < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"{count} workers did not poll {task_queue} within {timeout:.0f} s")
        time.sleep(0.5)


def launch_and_wait(repositories: list, timeout: float = 900) -> tuple[float, dict]:
    from runs.models import Run
    from runs.services import run_create

    started = time.perf_counter()
    ids = [
        run_create(repository=r, trigger=Run.Trigger.CLI, requested_by="bench").run_id
        for r in repositories
    ]
    runs = Run.objects.filter(run_id__in=ids)
    while runs.exclude(status__in=Run.TERMINAL).exists():
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"runs still open after {timeout:.0f} s")
        time.sleep(0.2)
    elapsed = time.perf_counter() - started
    outcomes: dict = {}
    for status in runs.values_list("status", flat=True):
        outcomes[status] = outcomes.get(status, 0) + 1
    return elapsed, outcomes


def measure(counts: list[int], runs: int, workdir: Path) -> dict[int, dict]:
    from django.conf import settings

    from repositories.models import Repository
    from tests.gitrepo import make_git_repo
    from tests.samples import DEMO_WEB

    out = {}
    for count in counts:
        repositories = [
            Repository.objects.create(
                full_name=f"bench/w{count}-{i}",
                host="local",
                local_path=make_git_repo(workdir / f"w{count}-{i}", DEMO_WEB),
            )
            for i in range(runs + 1)
        ]
        settings.TEMPORAL_TASK_QUEUE = f"bench-workers-{count}-{uuid.uuid4().hex[:8]}"
        workers = start_workers(count, settings.TEMPORAL_TASK_QUEUE)
        try:
            wait_for_pollers(settings.TEMPORAL_TASK_QUEUE, count)
            launch_and_wait(repositories[:1])  # warm-up: sandbox imports, first pool processes
            elapsed, outcomes = launch_and_wait(repositories[1:])
        finally:
            stop_workers(workers)
        out[count] = {"elapsed": elapsed, "per_min": runs * 60 / elapsed, "outcomes": outcomes}
        print(
            f"  {count} worker process(es): {runs} runs in {elapsed:6.1f} s -> "
            f"{out[count]['per_min']:5.1f} runs/min  {outcomes}  (load average "
            f"{os.getloadavg()[0]:.1f})",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per worker count (40)")
    parser.add_argument("--workers", default="1,2,4", help="worker counts (1,2,4)")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",")]

    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(
        database=DB_NAME,
        valkey_db=VALKEY_DB,
        AMTP_LLM_PROVIDER="offline",
        # The demo repository holds an app BootApp would start, explore and verify in a
        # browser (a minute a run): off, so this measures orchestration; bench_boot.py
        # and bench_grounding.py measure those stages.
        AMTP_BOOT_APPS="false",
    )
    from django.conf import settings

    from amtp_site import valkey

    valkey.client().flushdb()
    print(
        f"{args.runs} runs per worker count, all started at once; each worker has "
        f"{settings.AMTP_WORKER_PROCESSES} agent processes; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(prefix="amtp-bench-workers-") as tmp:
        out = measure(counts, args.runs, Path(tmp))
    base = out[counts[0]]["per_min"]
    for count in counts[1:]:
        print(
            f"RATIO workers_{count}_vs_{counts[0]}: {out[count]['per_min'] / base:.2f}x "
            f"(goal: reported; linear would be {count / counts[0]:.1f}x, "
            f"{os.cpu_count()} CPUs here)"
        )

    # The Temporal SDK's runtime threads can abort the interpreter's shutdown
    # (temporalio/sdk-python#300: "PyGILState_Release ... finalizing"): skip it, all is printed.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
