"""Starting workflows: :func:`run_starts_dispatch` starts the workflows of accepted runs (the
``run_starts`` outbox that ``runs.services.run_create`` fills), and :class:`StartDispatcher`
calls it in a thread of each worker process.

It wakes when PostgreSQL notifies ``amtp_run_starts`` (a trigger on every insert into the
outbox), and every ``POLL_S`` anyway, so a notification missed while it reconnected delays
nothing for long. Any number of workers may run it: each claims rows the others are not
starting. While Temporal or PostgreSQL cannot be reached it tries again, waiting twice as long
each time up to ``MAX_BACKOFF_S``; the runs wait ``pending`` in the outbox meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from amtp_site import temporal, tracing
from runs import selectors, transitions
from runs.errors import OrchestratorUnavailable
from runs.models import Run, Stage
from runs.temporal.client import workflow_of, workflow_params

log = logging.getLogger(__name__)

CHANNEL = "amtp_run_starts"
POLL_S = 5.0
MAX_BACKOFF_S = 30.0
WAKE_S = 0.5  # how soon stop() is noticed
# Workflow starts one dispatcher has in flight at once: enough to hide Temporal's latency,
# few enough that a burst of accepted runs does not flood it (each worker runs a dispatcher).
START_CONCURRENCY = 16
WAITING_TO_START = (
    "Waiting to start: the orchestrator (Temporal) cannot be reached; the run starts as soon as "
    "it answers, nothing to do"
)


def run_start(run: Run) -> None:
    """Start the run's workflow now (reconcile_runs; run_starts_dispatch starts accepted runs).
    Starting twice is still one workflow."""
    run_starts_dispatch(runs=[run])


# The oldest rows no other dispatcher holds, locked until this transaction ends (the ORM's
# select_for_update compiled at every call cost more than the statement).
_CLAIM = (
    "SELECT run_id, task_queue FROM run_starts ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED"
)


def run_starts_dispatch(limit: int = 100, *, runs: list[Run] | None = None) -> int:
    """Start the workflows of up to ``limit`` accepted runs, oldest first, each on the task
    queue it was accepted for, and take them off ``run_starts`` (a run cancelled meanwhile is
    taken off unstarted); the number taken off. Rows another dispatcher is starting are
    skipped (FOR UPDATE SKIP LOCKED), so any number of workers may drain one outbox. Raises
    OrchestratorUnavailable when some could not be started (Temporal unreachable, or it
    refused them): those stay for the next call, the others are taken off. ``runs``: start
    exactly these (on TEMPORAL_TASK_QUEUE), in or out of the outbox."""
    with transaction.atomic(), connection.cursor() as cursor:
        if runs is None:
            cursor.execute(_CLAIM, [limit])
            queues = dict(cursor.fetchall())
            runs = selectors.runs_with_repository(queues)
        else:
            queues = {run.run_id: settings.TEMPORAL_TASK_QUEUE for run in runs}
        pending = [run for run in runs if run.status == Run.Status.PENDING]
        failures = _start_workflows(pending, queues) if pending else {}
        done = [str(run.run_id) for run in runs if run.run_id not in failures]
        cursor.execute("DELETE FROM run_starts WHERE run_id = ANY(%s::uuid[])", [done])
    if failures:
        # Shown on the run's first stage (admin, API) until the stage starts, which clears it.
        # The details (address, error) go to the worker's log only, like the API's 503s.
        transitions.stages_error(
            list(failures), Stage.ORDER[0], OrchestratorUnavailable.__name__, WAITING_TO_START
        )
        run_id, exc = next(iter(failures.items()))
        raise OrchestratorUnavailable(
            f"could not start {len(failures)} run(s) (run {run_id} among them) on Temporal at "
            f"{settings.TEMPORAL_ADDRESS}: {exc}; they stay pending and are started when it "
            "answers",
            run_id=str(run_id),
            taken=len(done),  # started and taken off all the same
        )
    return len(done)


def _start_workflows(runs: list[Run], queues: dict) -> dict[uuid.UUID, BaseException]:
    """Start every run's workflow at once; the runs that could not be started, with why."""
    params = [workflow_params(run) for run in runs]  # reads repositories: not in the loop

    gate = asyncio.Semaphore(START_CONCURRENCY)

    async def start(client, run: Run, params) -> None:
        try:
            # Inside the trace of the request that accepted the run (docs/operations.md).
            async with gate:
                with tracing.attached(run.traceparent):
                    await client.start_workflow(
                        workflow_of(run),
                        params,
                        id=str(run.run_id),
                        task_queue=queues[run.run_id],
                        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                    )
        except WorkflowAlreadyStartedError:
            pass  # the same run started twice is still one workflow

    async def start_all(client):
        return await asyncio.gather(
            *(start(client, run, p) for run, p in zip(runs, params, strict=True)),
            return_exceptions=True,
        )

    try:
        results = temporal.call(start_all)
    except (RuntimeError, RPCError) as exc:  # cannot connect
        results = [exc] * len(runs)
    return {
        run.run_id: r for run, r in zip(runs, results, strict=True) if isinstance(r, BaseException)
    }


class StartDispatcher:
    """``start()`` / ``stop()``; ``batch`` runs per claim. ``dispatched`` counts the runs it
    took off the outbox; ``drained`` is set each time it found the outbox empty."""

    def __init__(self, batch: int = 100) -> None:
        self.batch = batch
        self.dispatched = 0
        self.drained = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name="run-starts")

    def start(self) -> StartDispatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _main(self) -> None:
        self._backoff = 0.0
        try:
            while not self._stop.is_set():
                try:
                    self._serve()
                except Exception as exc:  # noqa: BLE001 - it must outlive any one failure
                    backoff = self._backoff = min(MAX_BACKOFF_S, max(0.5, self._backoff * 2))
                    expected = (OrchestratorUnavailable, DatabaseError, psycopg.Error)
                    log.warning(
                        "run starts: %s; trying again in %.1f s",
                        exc,
                        backoff,
                        exc_info=not isinstance(exc, expected),
                    )
                    connection.close()  # a broken connection is replaced on the next try
                    self._stop.wait(backoff)
        finally:
            connection.close()

    def _dispatch(self) -> int:
        """One claim; counted even when some of its runs could not be started (Temporal came
        back in the middle of it), since the others were."""
        try:
            taken = run_starts_dispatch(self.batch)
        except OrchestratorUnavailable as exc:
            self.dispatched += exc.details.get("taken", 0)
            raise
        self.dispatched += taken
        return taken

    def _serve(self) -> None:
        """LISTEN on this thread's database connection; drain the outbox whenever notified,
        and every POLL_S, until stopped (or until something fails: the caller backs off)."""
        connection.ensure_connection()
        raw = connection.connection  # Django's own, in autocommit: notifications arrive
        raw.execute(f"LISTEN {CHANNEL}")
        due = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= due:
                # Until a claim comes back short: the outbox was empty then, and a row added
                # since has sent a notification, which psycopg keeps for notifies() below.
                while taken := self._dispatch():
                    if taken < self.batch:
                        break
                self.drained.set()
                self._backoff = 0.0  # Temporal and PostgreSQL answer again
                due = time.monotonic() + POLL_S
            for _ in raw.notifies(timeout=WAKE_S, stop_after=1):
                due = 0.0
