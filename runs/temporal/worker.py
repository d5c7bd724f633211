"""The Temporal worker: the workflow, bookkeeping activities in the event loop,
CreatePullRequest in a thread, agent activities in a process pool where every task gets a
fresh process, forked from a template that has already set Django up and imported the agent
stack (:mod:`runs.temporal.agent_template`).

Supervision: if an agent process dies (OOM kill, segfault), ``concurrent.futures`` marks the
whole pool broken, and Temporal would stop the worker. :class:`RespawningProcessPool` turns
that into a retryable ``AgentProcessDied`` for the attempt that died and replaces the pool on
the next submission, so Temporal retries the attempt on a healthy pool. The worker process itself is supervised by whatever runs it
(``make run``'s launcher, systemd or Kubernetes in production); if it dies, its in-flight
activities time out (start-to-close) and are retried on another worker, and the idempotency
keys make those retries reuse what was already persisted.
"""

from __future__ import annotations

import asyncio
import compileall
import concurrent.futures
import contextlib
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool, _RemoteTraceback
from datetime import timedelta

from django.conf import settings
from django.db import connections
from temporalio.worker import Interceptor, Worker
from temporalio.workflow import NondeterminismError

from amtp_site import metrics
from amtp_site.temporal import connect, metrics_runtime
from approvals import activities as approval_activities
from repositories.schedules import maintenance_schedules_reconcile, scheduled_repositories
from runs.errors import AgentProcessDied
from runs.temporal import activities as run_activities
from runs.temporal.activities import CANCEL_NOTICE_S, AgentActivities
from runs.temporal.agent_gate import AgentPoolGate
from runs.temporal.agent_process import WorkerStdio, agent_process_setup, in_agent_process
from runs.temporal.check_workflow import CheckWorkflow
from runs.temporal.dispatcher import StartDispatcher
from runs.temporal.log_context import StageLogContext
from runs.temporal.maintenance_workflow import MaintenanceWorkflow
from runs.temporal.scheduled_workflow import ScheduledMaintenanceWorkflow
from runs.temporal.workflow import TestGenerationWorkflow
from verification import sandbox
from verification.boot import app as boot_app

log = logging.getLogger(__name__)


TEMPLATE = "runs.temporal.agent_template"
_template_env: dict[str, str] | None = None  # the environment the forkserver was started with


def _environment() -> dict[str, str]:
    """What an agent process's settings are read from (pytest's own per-test variable aside)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def _stop_template() -> None:
    """Stop the forkserver, so that the next fork starts a new one. Only when no pool has an
    agent process running: a pool sees its children as dead once their forkserver is gone.
    ``_stop`` alone closes the pipe whose end tells it to exit and waits for it, but a process
    forked from this one since (the heartbeat manager, a fake service) holds a copy of that
    pipe and would keep it waiting forever."""
    server = multiprocessing.forkserver._forkserver
    if server._forkserver_pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server._forkserver_pid, signal.SIGTERM)
    server._stop()


def agent_context() -> multiprocessing.context.BaseContext:
    """multiprocessing's forkserver, preloading the agent template. The forkserver is started
    on the first fork and keeps the environment of that moment; when the environment has
    changed since (tests set a child's settings through it between workers), it is stopped
    and the next fork starts a new one."""
    global _template_env
    env = _environment()
    if _template_env is not None and env != _template_env:
        _stop_template()
    _template_env = env
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([TEMPLATE])
    return context


class RespawningProcessPool(concurrent.futures.Executor):
    """A process pool, one fresh process per task, that survives the death of a child.

    Temporal shuts the whole worker down when its executor raises ``BrokenExecutor``, and a
    ``ProcessPoolExecutor`` is broken for good once any child dies. So the attempt whose process
    died fails with the retryable ``AgentProcessDied`` instead, and the next submission gets a
    new pool.
    """

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._pool = self._new_pool()
        self._broken = False
        self.respawns = 0

    def _new_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        self._env = _environment()
        return concurrent.futures.ProcessPoolExecutor(
            max_workers=self.max_workers,
            mp_context=agent_context(),
            max_tasks_per_child=1,  # the child exits after its task; a new one is forked
            initializer=agent_process_setup,
            initargs=(WorkerStdio(),),
        )

    def _respawn(self) -> None:
        log.error("an agent process died; replacing the agent process pool")
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new_pool()
        self._broken = False
        self.respawns += 1

    def submit(self, fn, /, *args, **kwargs) -> concurrent.futures.Future:
        with self._lock:
            if self._env != _environment():  # forks made ahead would carry the old settings
                self._pool.shutdown(wait=True)  # (tests only: a worker's settings stay put)
                self._pool = self._new_pool()
            if self._broken:
                self._respawn()
            try:
                inner = self._pool.submit(in_agent_process, TEMPLATE, fn, *args, **kwargs)
            except BrokenProcessPool:
                self._respawn()
                inner = self._pool.submit(in_agent_process, TEMPLATE, fn, *args, **kwargs)
        outer: concurrent.futures.Future = concurrent.futures.Future()
        outer.add_done_callback(lambda f: f.cancelled() and inner.cancel())
        inner.add_done_callback(lambda f: self._relay(f, outer))
        return outer

    def _relay(self, inner: concurrent.futures.Future, outer: concurrent.futures.Future) -> None:
        if outer.done():
            return
        if inner.cancelled():
            outer.cancel()
        elif isinstance(inner.exception(), BrokenProcessPool):
            self._broken = True
            outer.set_exception(
                AgentProcessDied(
                    "the agent process died (killed or crashed) before finishing; "
                    "Temporal retries the activity in a fresh process"
                )
            )
        elif inner.exception() is not None:
            outer.set_exception(_without_remote_traceback(inner.exception()))
        else:
            outer.set_result(inner.result())

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def _without_remote_traceback(exc: BaseException) -> BaseException:
    """The error an agent process raised, its traceback (which the pool attaches as the
    cause, and Temporal would send on) written to the log instead."""
    if isinstance(exc.__cause__, _RemoteTraceback):
        log.warning(
            "an agent process raised %s; its traceback:%s", type(exc).__name__, exc.__cause__.tb
        )
        exc.__cause__ = None
    return exc


# The workflows the worker runs, and the activities beside the agent stages: each listed here,
# none found by name.
WORKFLOWS = (
    TestGenerationWorkflow,
    MaintenanceWorkflow,
    CheckWorkflow,
    ScheduledMaintenanceWorkflow,
)
ACTIVITIES = (
    run_activities.start_run,
    run_activities.end_run,
    approval_activities.request_approval,
    approval_activities.expire_approval,
    run_activities.boot_app,
    run_activities.explore_app,
    run_activities.create_pull_request,
    run_activities.discard_pull_request,
    run_activities.open_maintenance_pull_request,
    run_activities.report_check_run,
    run_activities.report_check_run_hold,
    run_activities.start_scheduled_maintenance,
)


def max_concurrent_activities() -> int:
    return max(4, settings.AMTP_WORKER_PROCESSES * 4)


def compile_workflow_modules(workflows: Sequence[type]) -> None:
    """Write the bytecode of the workflows' modules (and their packages) if it is missing or
    stale. The sandbox imports a workflow's module afresh for every workflow it starts; with
    bytecode writing switched off (PYTHONDONTWRITEBYTECODE, usual in containers) Python would
    compile its source each time (~2 ms a run here). Best effort: a read-only install just
    goes on compiling."""
    names = set()
    for workflow in workflows:
        parts = workflow.__module__.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    for name in sorted(names):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            compileall.compile_file(path, quiet=2)


def build_worker(
    client,
    *,
    task_queue: str,
    pool: concurrent.futures.Executor,
    workflows: Sequence[type] = WORKFLOWS,
    activities: Sequence | None = None,
    interceptors: Sequence[Interceptor] = (),
) -> Worker:
    """AMTP's worker configuration; ``activities`` defaults to :data:`ACTIVITIES` and the agent
    activities, whose agent processes come from ``pool``. Benchmarks pass other
    workflows/activities and tests pass interceptors (fault injection) to the same setup."""
    if activities is None:
        agents = pool
        for interceptor in interceptors:  # a test's interceptor may wrap it (fault injection)
            agents = getattr(interceptor, "agent_pool", lambda p: p)(agents)
        activities = [*ACTIVITIES, *AgentActivities(agents).all()]
    compile_workflow_modules(workflows)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=list(workflows),
        activities=list(activities),
        max_concurrent_activities=max_concurrent_activities(),
        graceful_shutdown_timeout=timedelta(seconds=10),
        # A workflow this code cannot replay (started by an earlier AMTP whose workflow had
        # another shape) fails instead of retrying its task forever, and reconcile_runs then
        # ends its run saying why (docs/operations.md, "Upgrading").
        workflow_failure_exception_types=[NondeterminismError],
        # Heartbeats reach Temporal this often, and a cancel request reaches agents with them.
        max_heartbeat_throttle_interval=timedelta(seconds=CANCEL_NOTICE_S),
        # Agent activities beyond the pool's processes wait in the gate, heartbeating.
        interceptors=[
            AgentPoolGate(getattr(pool, "max_workers", 1)),
            StageLogContext(),
            *interceptors,
        ],
    )


async def serve(
    *,
    task_queue: str,
    pool: RespawningProcessPool,
    stop: asyncio.Event,
    ready: threading.Event | None = None,
    dispatch: bool = True,
    **build,
) -> None:
    """Poll ``task_queue`` until ``stop`` is set (``ready`` is set once polling), then shut the
    worker and its agent process pool down. With ``dispatch``, start accepted runs' workflows
    meanwhile (:mod:`runs.temporal.dispatcher`). ``build`` goes to :func:`build_worker`."""
    client = await connect(runtime=metrics_runtime())
    if settings.AMTP_WORKER_METRICS_ADDRESS:
        metrics.serve(settings.AMTP_WORKER_METRICS_ADDRESS)
    # The threads the worker's own work runs in (bookkeeping, the agent stages' database work,
    # CreatePullRequest): one for each activity it may run at once, so a slow one (a GitHub
    # host waiting between writes) never holds up the bookkeeping of other runs. Each keeps
    # its database connection between calls, until the worker stops.
    threads = max_concurrent_activities() + 4
    executor = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="amtp-worker")
    asyncio.get_running_loop().set_default_executor(executor)
    try:
        worker = build_worker(client, task_queue=task_queue, pool=pool, **build)
        async with worker, _dispatching(dispatch):
            log.info(
                "worker polling %s on %s (%d agent processes)",
                task_queue,
                settings.TEMPORAL_ADDRESS,
                pool.max_workers,
            )
            if ready is not None:
                ready.set()
            await stop.wait()
            log.info("shutting down the worker")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        await _close_connections(executor, threads)


@contextlib.asynccontextmanager
async def _dispatching(dispatch: bool):
    dispatcher = StartDispatcher().start() if dispatch else None
    try:
        yield
    finally:
        if dispatcher is not None:
            await asyncio.to_thread(dispatcher.stop)


async def _close_connections(executor: concurrent.futures.Executor, threads: int) -> None:
    """Each of the executor's threads closes the database connection it kept: ``threads``
    tasks that wait for one another, so that each runs in a thread of its own."""
    together = threading.Barrier(threads)

    def close() -> None:
        connections.close_all()
        together.wait(10)

    loop = asyncio.get_running_loop()
    await asyncio.gather(
        *(loop.run_in_executor(executor, close) for _ in range(threads)), return_exceptions=True
    )


async def run_worker(*, task_queue: str, processes: int, **build) -> None:
    """The worker process (``manage.py run_worker``): brings the maintenance schedules in
    step with the repositories' settings, then serves until SIGTERM or SIGINT."""
    await _reconcile_schedules()
    if swept := await asyncio.to_thread(sandbox.sweep):  # a killed worker's boxes
        log.info("removed %d box(es) a stopped worker left: %s", len(swept), swept[:5])
    if swept := await asyncio.to_thread(boot_app.sweep_staging):  # and its half-copied installs
        log.info("removed %d unfinished install(s) a stopped worker left: %s", len(swept), swept)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(task_queue=task_queue, pool=RespawningProcessPool(processes), stop=stop, **build)


async def _reconcile_schedules() -> None:
    """Best effort: a schedule a person's save could not set while Temporal was away is set
    now; failing that, the worker still starts (serving needs Temporal anyway)."""
    try:
        wanted = await asyncio.to_thread(scheduled_repositories)
        for line in await maintenance_schedules_reconcile(await connect(), wanted):
            log.info("%s", line)
    except Exception:
        log.exception("could not bring the maintenance schedules in step; run sync_schedules")
