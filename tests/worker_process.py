"""The real worker process in a process group of its own, for tests and scripts that kill it.

:func:`start_worker` runs ``manage.py run_worker`` (or, with interceptors, the same
``run_worker`` through ``python -m tests.worker_process``) with ``start_new_session``, so the
worker, its agent processes, its multiprocessing manager and whatever they started (the MCP
server) share one process group: :func:`kill_worker` SIGKILLs all of them at once, no goodbye,
as an OOM kill or a lost machine would. Interceptors, each one argument:

- ``fault:<activity>:<crash|hang|exit>:<marker>`` (tests/faults.py): once, the agent process
  dies after answering, the worker hangs right after the stage's artifact is committed, or
  the worker dies once the stage has passed;
- ``slow:<activity>:<seconds>:<marker>[:<release>]`` (tests/slow_host.py): once, the local host
  writes the branch and the PR, writes ``marker``, then holds (``pr_lock`` held) until
  ``release`` exists, for at most ``seconds``.

    python -m tests.worker_process <task queue> <processes> [interceptor ...]

The worker reads its settings from the environment (the test fixtures point it at the test
database; the scripts at theirs).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start_worker(
    log_path: Path,
    queue: str,
    *interceptors: str,
    processes: int = 1,
    root: Path = ROOT,
    env: dict[str, str] | None = None,
) -> subprocess.Popen:
    """The worker of the source tree at ``root`` (another release's: tests/test_upgrade_release.py),
    with ``env`` (default: this process's environment)."""
    if interceptors:
        cmd = ["-m", "tests.worker_process", queue, str(processes), *interceptors]
    else:
        cmd = ["manage.py", "run_worker", "--task-queue", queue, "--processes", str(processes)]
    with open(log_path, "a") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, *cmd],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill_worker(process: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (agent processes included)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # already gone
    process.wait(10)


def stop_worker(process: subprocess.Popen) -> None:
    """SIGTERM, as a supervisor stops it: the worker shuts down gracefully."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        kill_worker(process)


def interceptor(spec: str):
    from tests.faults import Fault, FaultOnce
    from tests.slow_host import Slow, SlowDown

    kind, rest = spec.split(":", 1)
    if kind == "fault":
        return FaultOnce(Fault.parse(rest))
    if kind == "slow":
        return SlowDown(**dataclasses.asdict(Slow.parse(rest)))
    raise ValueError(f"unknown interceptor {spec!r}: fault:... or slow:...")


def main(task_queue: str, processes: str, *specs: str) -> None:
    import asyncio

    from amtp_site.child import django_setup

    django_setup()
    from runs.temporal.worker import run_worker

    interceptors = [interceptor(spec) for spec in specs]
    asyncio.run(
        run_worker(task_queue=task_queue, processes=int(processes), interceptors=interceptors)
    )


if __name__ == "__main__":
    # Through the importable module, not __main__: the pool pickles what the interceptors
    # hand it by their module's name.
    from tests.worker_process import main as importable_main

    importable_main(*sys.argv[1:])
