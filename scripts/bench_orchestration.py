"""Benchmark AMTP's orchestration against a bare Temporal workflow on the same server.

AMTP: N full pipeline runs (offline provider) on a small local git repository, started with
``run_create`` and executed by the real worker (``runs.temporal.worker.build_worker`` with the
``RespawningProcessPool``: a fresh process per task, ``max_tasks_per_child=1``, forked from the
preloaded agent template). Bare: a workflow of four no-op activities (scripts/bare_workflow.py)
in the same kind of pool. Each is measured sequentially (wall time per run) and with N runs
launched at once (throughput; 3 rounds, taking turns), after one unmeasured warm-up run. Prints ``RATIO`` lines
against the goals of docs/benchmarks.md.

    .venv/bin/python scripts/bench_orchestration.py [--runs 10] [--rounds 3]

Uses its own PostgreSQL database (amtp_bench_orch, recreated), Valkey DB 13 (flushed) and
task queues, and starts the embedded devstack if it is not running. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make amtp_site, runs, tests importable

DB_NAME = "amtp_bench_orch"
VALKEY_DB = 13
PER_RUN_GOAL = 1.5  # AMTP's time per run, at most this times the bare workflow's
THROUGHPUT_GOAL = 0.7  # AMTP's runs per minute, at least this times the bare workflow's
CRAWL_GOAL_S = 1.5  # CrawlRepo on the demo repository, end to end (activity started -> done)


async def _results(workflow_ids: list[str]) -> list:
    from amtp_site.temporal import connect, workflow_result

    client = await connect()
    return await asyncio.gather(*(workflow_result(client, w) for w in workflow_ids))


def launch_amtp(repositories, count: int) -> list:
    """Start ``count`` runs the way every surface does (``run_create``), each on a repository
    of its own from ``repositories`` (an iterator): per-repository concurrency limits and the
    PR lock do not serialise them, and every crawl is a cold one (nothing cached)."""
    from runs.models import Run
    from runs.services import run_create

    return [
        str(
            run_create(
                repository=next(repositories), trigger=Run.Trigger.CLI, requested_by="bench"
            ).run_id
        )
        for _ in range(count)
    ]


def launch_bare(task_queue: str, count: int) -> list:
    from bare_workflow import WORKFLOW_NAME

    from amtp_site.temporal import connect

    async def start() -> list[str]:
        client = await connect()  # run_create connects per run too
        ids = [f"bench-bare-{uuid.uuid4()}" for _ in range(count)]
        for workflow_id in ids:
            await client.start_workflow(
                WORKFLOW_NAME, workflow_id, id=workflow_id, task_queue=task_queue
            )
        return ids

    return asyncio.run(start())


def measure(launchers: dict, runs: int, rounds: int) -> dict[str, dict]:
    """Sequential: one run at a time, start to result, alternating between the workflows so
    background load on a shared machine hits both alike. Concurrent: ``runs`` launched at
    once, first start to last result, ``rounds`` times, the workflows taking turns (and
    turns about who goes first); runs per minute and CPU over all rounds."""
    out = {name: {"seq": [], "ids": [], "results": []} for name in launchers}
    for _ in range(runs):
        for name, launch in launchers.items():
            m, started = out[name], time.perf_counter()
            m["ids"] += launch(1)
            m["results"] += asyncio.run(_results(m["ids"][-1:]))  # a failure raises, with cause
            m["seq"].append(time.perf_counter() - started)
    for m in out.values():
        m["elapsed"], m["cpu"] = 0.0, {}
    order = list(launchers)
    for _ in range(rounds):
        for name in order:
            m, cpu, started = out[name], cpu_seconds(), time.perf_counter()
            m["ids"] += launchers[name](runs)
            m["results"] += asyncio.run(_results(m["ids"][-runs:]))
            m["elapsed"] += time.perf_counter() - started
            for k, v in cpu_seconds().items():
                m["cpu"][k] = m["cpu"].get(k, 0.0) + (v - cpu.get(k, 0.0)) / (runs * rounds)
        order.reverse()
    for m in out.values():
        m["concurrent"] = runs * rounds
        m["per_min"] = m["concurrent"] * 60 / m["elapsed"]
    return out


# Which processes a run's CPU time is spent in, told apart by command line (the worker and
# its forkserver are this process and its children; the services are the devstack's).
CPU_GROUPS = {
    "agent processes": "multiprocessing.forkserver",
    "Temporal": "temporal server",
    "PostgreSQL": "postgres",
    "Valkey": "valkey-server",
}


def cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system, reaped children included) per group of processes now."""
    tick = os.sysconf("SC_CLK_TCK")
    totals: dict[str, float] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        group = "worker" if int(pid) == os.getpid() else None
        group = group or next((g for g, k in CPU_GROUPS.items() if k in cmdline), None)
        if group:
            totals[group] = totals.get(group, 0.0) + sum(map(int, fields[11:15])) / tick
    return totals


async def _timelines(workflow_ids: list[str]) -> list[dict]:
    """Per run, from Temporal's event history: seconds each activity ran (started ->
    completed), seconds activities waited for a worker slot, seconds in workflow tasks."""
    from temporalio.api.enums.v1 import EventType as E

    from amtp_site.temporal import connect

    client = await connect()
    rows = []
    for workflow_id in workflow_ids:
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        row: dict = {"activities": {}, "queued": 0.0, "workflow_tasks": 0.0}
        scheduled, started, task = {}, {}, 0.0
        times = [e.event_time.ToMicroseconds() / 1e6 for e in history.events]
        for e, at in zip(history.events, times, strict=True):
            if e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled[e.event_id] = (
                    e.activity_task_scheduled_event_attributes.activity_type.name,
                    at,
                )
            elif e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                sid = e.activity_task_started_event_attributes.scheduled_event_id
                started[sid] = at
                row["queued"] += at - scheduled[sid][1]
            elif e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                sid = e.activity_task_completed_event_attributes.scheduled_event_id
                name = scheduled[sid][0]
                row["activities"][name] = row["activities"].get(name, 0.0) + at - started[sid]
            elif e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                task = at
            elif e.event_type == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                row["workflow_tasks"] += at - task
        row["workflow"] = times[-1] - times[0]
        rows.append(row)
    return rows


def breakdown(m: dict, runs: int, pool_activities) -> dict:
    """Means over the sequential runs: where a run's wall time goes."""
    rows = asyncio.run(_timelines(m["ids"][:runs]))
    names = list(rows[0]["activities"])
    activity = {n: statistics.mean(r["activities"].get(n, 0.0) for r in rows) for n in names}
    pool = {n: s for n, s in activity.items() if n in pool_activities}
    out = {
        "pool": pool,
        "bookkeeping": sum(s for n, s in activity.items() if n not in pool),
        "queued": statistics.mean(r["queued"] for r in rows),
        "workflow_tasks": statistics.mean(r["workflow_tasks"] for r in rows),
        "workflow": statistics.mean(r["workflow"] for r in rows),
    }
    out["outside"] = statistics.mean(m["seq"]) - out["workflow"]  # starting it, fetching result
    return out


def stage_seconds(run_ids: list[str]) -> tuple[dict[str, float], int]:
    """Mean seconds per stage as the stages table records them (from inside the activity, so
    process start-up and imports are not included), and retries over the given runs."""
    from runs.models import Stage
    from runs.stages import STAGES

    activity_of = {stage: name for name, stage in STAGES}
    per_stage: dict[str, list[float]] = {}
    retries = 0
    for stage in Stage.objects.filter(run_id__in=run_ids):
        retries += max(stage.attempts - 1, 0)
        if stage.started_at and stage.finished_at:
            seconds = (stage.finished_at - stage.started_at).total_seconds()
            per_stage.setdefault(activity_of[stage.name], []).append(seconds)
    return {k: statistics.mean(v) for k, v in per_stage.items()}, retries


def summary(label: str, m: dict, b: dict, stages: dict[str, float] | None = None) -> None:
    seq = m["seq"]
    print(
        f"  sequential  mean {statistics.mean(seq):6.2f} s   median "
        f"{statistics.median(seq):6.2f} s   min {min(seq):.2f}  max {max(seq):.2f}  ({label})"
    )
    print(
        f"  concurrent  {m['concurrent']} runs in {m['elapsed']:.2f} s -> "
        f"{m['per_min']:.1f} runs/min"
    )
    cpu = ", ".join(f"{k} {v * 1000:.0f}" for k, v in sorted(m["cpu"].items()))
    print(f"  CPU per run (concurrent, ms): {cpu}; total {sum(m['cpu'].values()) * 1000:.0f}")
    stages = stages or {}
    pool = ", ".join(
        f"{n} {s:.2f}" + (f" (body {stages[n]:.2f})" if n in stages else "")
        for n, s in b["pool"].items()
    )
    print(
        f"  per run     workflow {b['workflow']:.2f} s: pool activities "
        f"{sum(b['pool'].values()):.2f} s [{pool}], bookkeeping activities "
        f"{b['bookkeeping']:.2f} s, task-queue latency {b['queued']:.2f} s, workflow tasks "
        f"{b['workflow_tasks']:.2f} s; starting + fetching the result {b['outside']:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="N (default 10)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of N runs at once, each workflow (3)"
    )
    args = parser.parse_args()
    n = args.runs

    # Production settings, as a deployed worker runs them (DEBUG keeps a log of every SQL
    # statement, which costs the worker CPU the bare workflow does not spend).
    os.environ.update(DJANGO_DEBUG="false", DJANGO_SECRET_KEY=secrets.token_urlsafe(50))
    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(
        database=DB_NAME,
        valkey_db=VALKEY_DB,
        TEMPORAL_TASK_QUEUE=f"bench-amtp-{uuid.uuid4().hex[:8]}",
        AMTP_LLM_PROVIDER="offline",
        # The demo repository holds an app BootApp would start, explore and verify in a
        # browser (a minute a run): off, so this measures orchestration; bench_boot.py
        # and bench_grounding.py measure those stages.
        AMTP_BOOT_APPS="false",
    )
    from amtp_site import valkey

    valkey.client().flushdb()  # our own logical DB: no stale limits or locks
    with tempfile.TemporaryDirectory(prefix="amtp-bench-orch-") as tmp:
        measured = run_all(n, args.rounds, Path(tmp))
    report(n, args.rounds, measured["amtp"], measured["bare"])


def run_all(n: int, rounds: int, workdir: Path) -> dict[str, dict]:
    from bare_workflow import BareActivities, BareWorkflow
    from django.conf import settings

    from repositories.models import Repository
    from runs.temporal.worker_thread import WorkerThread
    from tests.gitrepo import make_git_repo
    from tests.samples import DEMO_WEB

    repositories = iter(
        [
            Repository.objects.create(
                full_name=f"bench/web-{i}",
                host="local",
                local_path=make_git_repo(workdir / f"web-{i}", DEMO_WEB),
            )
            for i in range(1 + n + n * rounds)  # the warm-up, sequential and concurrent runs
        ]
    )
    bare_queue = f"bench-bare-{uuid.uuid4().hex[:8]}"
    print(
        f"{n} runs each; worker pool: {settings.AMTP_WORKER_PROCESSES} processes (forked from "
        f"the agent template, max_tasks_per_child=1); Temporal {settings.TEMPORAL_ADDRESS}; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    launchers = {
        "amtp": lambda count: launch_amtp(repositories, count),
        "bare": lambda count: launch_bare(bare_queue, count),
    }
    # The same worker setup (pool, initializer, limits) for both; the bare one swaps the
    # workflow and activities.
    amtp_worker = WorkerThread(settings.TEMPORAL_TASK_QUEUE)
    bare_worker = WorkerThread(bare_queue, workflows=[BareWorkflow])
    bare_worker.build["activities"] = BareActivities(bare_worker.pool).all()
    with amtp_worker, bare_worker:
        for launch in launchers.values():  # warm-up: worker start, sandbox imports
            asyncio.run(_results(launch(1)))
        return measure(launchers, n, rounds)


def report(n: int, rounds: int, amtp: dict, bare: dict) -> None:
    import bare_workflow

    from runs.stages import CRAWL_REPO, STAGES

    assert set(amtp["results"]) == {"passed"}, amtp["results"]
    agent_names = {name for name, _stage in STAGES}
    stages, retries = stage_seconds(amtp["ids"][:n])
    amtp_b = breakdown(amtp, n, agent_names)
    bare_b = breakdown(bare, n, set(bare_workflow.ACTIVITY_NAMES))
    print(
        f"\nAMTP pipeline (offline provider, DEMO_WEB, default depth, local host); "
        f"retries: {retries}"
    )
    summary("run_create -> workflow result", amtp, amtp_b, stages)
    print("\nbare workflow (4 no-op activities, same pool)")
    summary("start_workflow -> workflow result", bare, bare_b)
    # What a pool activity costs beyond its own body: the fork, unpickling, the first queries.
    amtp_fixed = statistics.mean(amtp_b["pool"][n_] - stages.get(n_, 0.0) for n_ in amtp_b["pool"])
    print(
        f"\npool activity cost beyond its body: AMTP {amtp_fixed:.2f} s, bare "
        f"{statistics.mean(bare_b['pool'].values()):.2f} s (per activity; {CRAWL_REPO} body "
        f"includes the in-process MCP server's session)"
    )

    per_run = statistics.mean(amtp["seq"]) / statistics.mean(bare["seq"])
    per_run_median = statistics.median(amtp["seq"]) / statistics.median(bare["seq"])
    throughput = bare["per_min"] / amtp["per_min"]  # >1: AMTP gets fewer runs through
    # The agents' own work (stage bodies) is not orchestration: without it, what is left?
    orchestration = (statistics.mean(amtp["seq"]) - sum(stages.values())) / statistics.mean(
        bare["seq"]
    )
    print(
        f"\nAMTP / bare: per run {per_run:.2f}x (mean), {per_run_median:.2f}x (median); "
        f"throughput cost {throughput:.2f}x ({amtp['per_min']:.1f} vs {bare['per_min']:.1f} "
        f"runs/min); per run without the stage bodies {orchestration:.2f}x"
    )
    print(
        f"load average at the end {os.getloadavg()[0]:.1f} (other work on this machine "
        "slows both workflows; the ratio is the figure to compare)"
    )
    crawl = amtp_b["pool"].get(CRAWL_REPO, float("nan"))
    print(
        f"RATIO orchestration_per_run: {per_run_median:.2f} (AMTP / bare, median seconds per "
        f"run end to end, agents' start-up included; mean {per_run:.2f}; goal <= {PER_RUN_GOAL})"
    )
    print(
        f"RATIO orchestration_throughput: {1 / throughput:.2f} (AMTP / bare runs per minute, "
        f"{n} concurrent runs, {rounds} rounds; goal >= {THROUGHPUT_GOAL})"
    )
    print(
        f"RATIO crawl_repo_seconds: {crawl:.2f} (CrawlRepo on the demo repository, activity "
        f"started -> completed, mean; goal <= {CRAWL_GOAL_S})"
    )


if __name__ == "__main__":
    main()
