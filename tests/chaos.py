"""Chaos (docs/reliability.md, R2): runs in flight while the worker's process group is SIGKILLed at random
moments and started again; then what must hold, check by check.

Shared by ``scripts/chaos.py`` (30 runs, 5 kills) and ``tests/test_chaos.py`` (the bounded
version in ``make test``). The worker is the real one (tests/worker_process.py), its agent
processes in its process group; runs are on local git repositories, with the offline provider.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from amtp_site import valkey
from repositories.hosts.local import LocalGitHost
from repositories.models import Repository
from runs.models import Artifact, Run, Stage
from runs.pull_requests import head_branch_for
from runs.services import run_create
from tests.gitrepo import git
from tests.worker_process import kill_worker, start_worker, stop_worker

CHECKS = (
    "every run passed",
    "one head branch per run, no other",
    "at most one PR per run",
    "no stage left running",
    "concurrency counts back to 0",
    "no process of a killed worker left",
)


@dataclass
class Kill:
    after_s: float  # since the runs were launched
    running: dict[str, int]  # stages running at that moment, by name


@dataclass
class Chaos:
    runs: list[Run]
    kills: list[Kill] = field(default_factory=list)
    wall_s: float = 0.0
    killed: list = field(default_factory=list)  # every process of the killed workers
    failed: dict[str, str] = field(default_factory=dict)  # check -> what broke it

    def report(self) -> str:
        lines = [f"{len(self.runs)} runs, {len(self.kills)} kills, wall time {self.wall_s:.1f} s"]
        for number, kill in enumerate(self.kills, 1):
            running = ", ".join(f"{n} × {s}" for s, n in sorted(kill.running.items())) or "-"
            lines.append(f"  kill {number} at {kill.after_s:5.1f} s; stages running: {running}")
        lines += [f"  {c}: {self.failed.get(c, 'holds')}" for c in CHECKS]
        return "\n".join(lines)


def launch(repositories: list[Repository], count: int, depth_level: str = "smoke") -> list[Run]:
    """``count`` runs at once, round robin over ``repositories``."""
    return [
        run_create(repository=repositories[i % len(repositories)], depth_level=depth_level)
        for i in range(count)
    ]


def unleash(
    runs: list[Run],
    queue: str,
    logs: Path,
    *,
    kills: int,
    rng: random.Random,
    gap: tuple[float, float],
    pause: tuple[float, float] = (0.0, 1.0),
    processes: int = 2,
    timeout: float = 600,
) -> Chaos:
    """Start the worker; ``kills`` times: once it moved a stage, wait ``gap`` seconds more
    (random), SIGKILL the worker's process group, wait ``pause`` seconds (random), start a new
    worker. Then wait for every workflow's result (it comes once the run's slot is released)
    and check. A kill is skipped when every run has ended."""
    chaos, started = Chaos(runs), time.monotonic()
    worker = start_worker(logs / "worker-0.log", queue, processes=processes)
    try:
        while len(chaos.kills) < kills:
            before = _progress(runs)
            while _progress(runs) == before and _open(runs):
                time.sleep(0.1)  # until this worker moved a stage
            time.sleep(rng.uniform(*gap))
            running = _running(runs)
            if not _open(runs):
                break
            chaos.killed += _group(worker.pid)
            kill_worker(worker)
            chaos.kills.append(Kill(time.monotonic() - started, running))
            time.sleep(rng.uniform(*pause))
            worker = start_worker(
                logs / f"worker-{len(chaos.kills)}.log", queue, processes=processes
            )
        _results([str(r.run_id) for r in runs], timeout)
        chaos.wall_s = time.monotonic() - started
    finally:
        stop_worker(worker)
    chaos.failed = check(runs)
    if left := [p for p in chaos.killed if _alive(p)]:
        chaos.failed[CHECKS[5]] = "; ".join(" ".join(p.cmdline())[:200] for p in left)
    return chaos


def _group(pid: int) -> list:
    """The worker and every process it started (the crawler's MCP server is in a session of
    its own: it must end when its agent process dies)."""
    import psutil  # pgserver's dependency

    try:
        worker = psutil.Process(pid)
        return [worker, *worker.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(process) -> bool:
    import psutil

    try:  # is_running() compares start times: a reused pid is not the same process
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _running(runs: list[Run]) -> dict[str, int]:
    names = Stage.objects.filter(run__in=runs, status=Stage.Status.RUNNING).values_list("name")
    return dict(collections.Counter(name for (name,) in names))


def _progress(runs: list[Run]) -> list:
    stages = Stage.objects.filter(run__in=runs).order_by("run", "name")
    return list(stages.values_list("run", "name", "status", "attempts"))


def _open(runs: list[Run]) -> bool:
    return Run.objects.filter(pk__in=[r.pk for r in runs]).exclude(status__in=Run.TERMINAL).exists()


def _results(workflow_ids: list[str], timeout: float) -> list:
    """Every workflow's result or failure, as Temporal has it."""
    from amtp_site.temporal import connect, workflow_result

    async def results():
        client = await connect()
        waiting = asyncio.gather(
            *(workflow_result(client, w) for w in workflow_ids), return_exceptions=True
        )
        return await asyncio.wait_for(waiting, timeout)

    return asyncio.run(results())


def check(runs: list[Run]) -> dict[str, str]:
    """What does not hold, check by check (see CHECKS); empty when everything holds."""
    runs = list(Run.objects.filter(pk__in=[r.pk for r in runs]).select_related("repository"))
    failed = {}
    statuses = collections.Counter(r.status for r in runs)
    if set(statuses) != {Run.Status.PASSED}:
        failures = {
            f"{r.run_id}: {r.error_type} {r.error_message[:200]}" for r in runs if r.error_type
        }
        failed[CHECKS[0]] = f"{dict(statuses)} {sorted(failures)}"
    by_repo = collections.defaultdict(list)
    for run in runs:
        by_repo[run.repository].append(run)
    branches, prs = [], []
    for repository, its_runs in by_repo.items():
        path = repository.local_path
        have = git(path, "for-each-ref", "--format=%(refname:short)", "refs/heads/amtp/").split()
        want = sorted(head_branch_for(r) for r in its_runs)
        if sorted(have) != want:
            branches.append(f"{repository.full_name}: {sorted(set(have) ^ set(want))}")
        pulls = collections.Counter(
            p["head_branch"] for p in LocalGitHost(repository.full_name, path).pull_requests()
        )
        prs += [f"{repository.full_name} {b}: {n} PRs" for b, n in pulls.items() if n > 1]
    artifacts = collections.Counter(
        Artifact.objects.filter(run__in=runs, kind="pull_request").values_list("run", flat=True)
    )
    prs += [f"run {r}: {n} pull_request artifacts" for r, n in artifacts.items() if n > 1]
    if branches:
        failed[CHECKS[1]] = "; ".join(branches)
    if prs:
        failed[CHECKS[2]] = "; ".join(prs)
    stuck = Stage.objects.filter(run__in=runs, status=Stage.Status.RUNNING)
    if stuck.exists():
        failed[CHECKS[3]] = ", ".join(f"{s.run_id}:{s.name}" for s in stuck)
    counts = {r.full_name: valkey.concurrency_count(r.full_name) for r in by_repo}
    if any(counts.values()):
        failed[CHECKS[4]] = str({name: n for name, n in counts.items() if n})
    return failed
