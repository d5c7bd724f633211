"""Chaos drill (docs/reliability.md, R2): many runs in flight while the worker's process group is
SIGKILLed at random moments and started again.

``--runs`` runs (default 30) on ``--repositories`` local git repositories (default 10: three
runs each, so the third waits for a slot and runs of one repository contend for its PR lock),
offline provider, launched at once with ``run_create``. The real worker (``manage.py
run_worker``, its agent processes in its process group) is SIGKILLed ``--kills`` times (default
5): each time once it has moved a stage, after a random ``--gap`` more, then started again
after a random ``--pause``. Then, checked: every run terminal and ``passed``; one head branch
per run and no other; at most one PR per run; no stage left ``running``; every repository's
count of runs in progress back to 0; no process of a killed worker left. Prints the figures;
exit code 1 when a check fails.

    .venv/bin/python scripts/chaos.py [--runs 30] [--kills 5] [--seed N]

Uses its own PostgreSQL database (amtp_chaos, recreated), Valkey DB 11 (flushed) and task
queue on the embedded devstack (started if it is not running). The retry policy is the
production one (2 s, x2, 30 s, 20 attempts); the heartbeat and bookkeeping timeouts, after which a
dead worker's activities are retried, are ``--timeout`` s (default 10; 60 s by default in
production). ``tests/test_chaos.py`` is the bounded version in ``make test``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script: make amtp_site, runs, tests importable

DB_NAME = "amtp_chaos"
VALKEY_DB = 11


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--repositories", type=int, default=10)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None, help="random by default (printed)")
    parser.add_argument("--gap", type=float, nargs=2, default=(10.0, 150.0), metavar=("MIN", "MAX"))
    parser.add_argument("--pause", type=float, nargs=2, default=(0.0, 5.0), metavar=("MIN", "MAX"))
    parser.add_argument("--processes", type=int, default=2, help="agent processes")
    parser.add_argument("--timeout", type=float, default=10.0, help="heartbeat/bookkeeping, s")
    args = parser.parse_args()
    seed = random.randrange(1 << 32) if args.seed is None else args.seed

    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(
        database=DB_NAME,
        valkey_db=VALKEY_DB,
        TEMPORAL_TASK_QUEUE=f"chaos-{uuid.uuid4().hex[:8]}",
        AMTP_LLM_PROVIDER="offline",
        AMTP_HEARTBEAT_TIMEOUT_S=str(args.timeout),
        AMTP_BOOKKEEPING_TIMEOUT_S=str(args.timeout),
        AMTP_LOG_LEVEL="INFO",  # the worker logs: LLM calls, retries
    )
    from amtp_site import valkey

    valkey.client().flushdb()  # our own logical DB: no stale limits or locks
    with tempfile.TemporaryDirectory(prefix="amtp-chaos-") as tmp:
        return drill(args, seed, Path(tmp))


def drill(args, seed: int, workdir: Path) -> int:
    from django.conf import settings

    from repositories.models import Repository
    from runs.models import Artifact, Stage
    from tests.chaos import launch, unleash
    from tests.gitrepo import make_git_repo
    from tests.samples import DEMO_WEB

    repositories = [
        Repository.objects.create(
            full_name=f"chaos/web-{i}",
            host="local",
            local_path=make_git_repo(workdir / f"web-{i}", DEMO_WEB),
        )
        for i in range(args.repositories)
    ]
    print(
        f"seed {seed}; {args.runs} runs on {args.repositories} repositories (limit "
        f"{repositories[0].max_concurrent_runs} in progress each), {args.kills} kills "
        f"(gap {args.gap[0]:g}-{args.gap[1]:g} s, restart after {args.pause[0]:g}-"
        f"{args.pause[1]:g} s); worker: {args.processes} agent processes; heartbeat and "
        f"bookkeeping timeouts {settings.AMTP_HEARTBEAT_TIMEOUT_S:g} s; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    logs = workdir / "logs"
    logs.mkdir()
    runs = launch(repositories, args.runs, depth_level="")
    chaos = unleash(
        runs,
        settings.TEMPORAL_TASK_QUEUE,
        logs,
        kills=args.kills,
        rng=random.Random(seed),
        gap=tuple(args.gap),
        pause=tuple(args.pause),
        processes=args.processes,
        timeout=1800,
    )
    print(chaos.report())
    stages = Stage.objects.filter(run__in=runs)
    retried = sum(max(s.attempts - 1, 0) for s in stages)
    adopted = Artifact.objects.filter(
        run__in=runs, kind="pull_request", content__adopted=True
    ).count()
    print(
        f"stage attempts retried: {retried}; pull requests adopted by a retry: {adopted}; "
        f"load average at the end {os.getloadavg()[0]:.1f}"
    )
    if chaos.failed:
        for log in sorted(logs.iterdir()):
            print(f"--- {log.name} (tail)\n{log.read_text()[-2000:]}")
    return 1 if chaos.failed else 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"done in {time.monotonic() - started:.0f} s")
    sys.exit(code)
