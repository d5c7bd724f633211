"""Temporal activities: thin wrappers over runs.lifecycle and runs.pipeline.

Agent activities are sync functions that the worker runs in a process pool with
``max_tasks_per_child=1``, so each agent lives in a fresh process that is gone before the
next one starts. CreatePullRequest (not an agent) runs in a worker thread, and the
bookkeeping activities in the worker's event loop (through threads).
Typed AMTP errors become ApplicationErrors carrying their type name, retryability and
details (Temporal matches the retry policy's non-retryable list by that type name).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import logging
import threading
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import DatabaseError, close_old_connections, connections
from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError

from amtp_site.errors import AmtpError, amtp_error_in
from runs import lifecycle, pipeline, pull_requests, slots
from runs.temporal import types as t
from runs.temporal.agent_gate import beat_interval

logger = logging.getLogger(__name__)


def _note_error(run_id: str, stage: str, error_type: str, message: str) -> None:
    """Show the attempt's error on the stage, best effort: when PostgreSQL is the thing that
    is down, the attempt's own error must still reach Temporal (and its retry policy)."""
    try:
        lifecycle.stage_error(run_id, stage, error_type, message)
    except DatabaseError as exc:
        logger.warning("could not record %s on %s of run %s: %s", error_type, stage, run_id, exc)


def _typed(stage: str | None):
    """Map AmtpError → ApplicationError; record each failed attempt on the stage. An AmtpError
    wrapped in an exception group or a ``__cause__`` chain keeps its class: a final error
    raised inside a task group is not retried."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(arg):
            try:
                return fn(arg)
            except BaseException as raised:
                exc = raised if isinstance(raised, AmtpError) else amtp_error_in(raised)
                if exc is None:
                    if stage and isinstance(raised, Exception):
                        _note_error(arg, stage, type(raised).__name__, str(raised))
                    raise
                if stage:
                    _note_error(arg, stage, type(exc).__name__, exc.message)
                retry_after = exc.details.get("retry_after")
                raise ApplicationError(
                    exc.message,
                    exc.to_dict(),
                    type=type(exc).__name__,
                    non_retryable=not exc.retryable,
                    next_retry_delay=timedelta(seconds=retry_after) if retry_after else None,
                ) from exc

        return inner

    return wrap


# --- agent activities (process pool) ---------------------------------------------------


# Heartbeats also carry a cancel request to the agent process (the answer to a heartbeat
# says so): at least this often, and the worker sends them on as often (worker.py).
CANCEL_NOTICE_S = 5.0


def _heartbeating(fn):
    """Heartbeat from a side thread while the agent works, so Temporal notices a dead worker
    within the heartbeat timeout instead of the (long) start-to-close timeout, and the agent
    learns of a cancel request (``activity.is_cancelled()``). An attempt that fails once its
    run's cancellation was requested (it stopped before writing) is reported as cancelled."""

    @functools.wraps(fn)
    def inner(arg):
        context = contextvars.copy_context()  # the activity context lives in contextvars
        timeout = activity.info().heartbeat_timeout
        every = max(1.0, min(timeout.total_seconds() / 4 if timeout else 15.0, CANCEL_NOTICE_S))
        stop = threading.Event()

        def beat():
            while True:  # at once: the worker stops beating for it when this one starts
                try:
                    context.run(activity.heartbeat)
                except Exception:  # the activity is finishing; nothing left to keep alive
                    return
                if stop.wait(every):
                    return

        threading.Thread(target=beat, daemon=True, name="heartbeat").start()
        try:
            return fn(arg)
        except Exception as exc:
            if activity.is_cancelled():
                raise CancelledError(f"stopped: the run was cancelled ({exc})") from exc
            raise
        finally:
            stop.set()

    return inner


def _stoppable(stage_fn):
    """A stage that checks for a cancel before it writes (``stop``) gets Temporal's."""
    if "stop" not in inspect.signature(stage_fn).parameters:
        return stage_fn

    def stage(run_id: str) -> str:
        return stage_fn(run_id, stop=activity.is_cancelled)

    return stage


def _agent_activity(name: str, stage: str):
    """``pipeline.<stage>`` as the agent activity ``name``. The process pool pickles an
    activity by module and name, so each one is published here as ``activities.<stage>``."""
    fn = _heartbeating(_typed(stage)(_stoppable(getattr(pipeline, stage))))
    fn.__module__, fn.__name__, fn.__qualname__ = __name__, stage, stage
    globals()[stage] = fn
    return activity.defn(name=name)(fn)


# --- CreatePullRequest (a worker thread) -----------------------------------------------

# CreatePullRequest is not an agent: no LLM session, so no fresh process of its own. It runs
# in one of these threads, apart from the bookkeeping's (a GitHub host waits between writes).
PULL_REQUEST_THREADS = concurrent.futures.ThreadPoolExecutor(
    max_workers=4, thread_name_prefix="amtp-pull-request"
)


def _in_pull_request_thread(fn):
    def in_thread(run_id: str) -> str:
        try:
            return fn(run_id)
        finally:  # a connection of its own per call: these threads are idle most of the time
            connections.close_all()

    return sync_to_async(in_thread, thread_sensitive=False, executor=PULL_REQUEST_THREADS)


def _worker_stage_activity(name: str, stage: str):
    """``pipeline.<stage>`` as an activity run in a worker thread, heartbeating from the
    event loop. A cancel request reaches the stage through ``stop`` (it checks before writing
    and takes back what it wrote), and the activity ends only once the stage has stopped: the
    workflow takes back what is left after that, never while it is still being written."""
    work_in_thread = _in_pull_request_thread(_typed(stage)(_stoppable(getattr(pipeline, stage))))

    async def beat() -> None:
        every = max(1.0, min(beat_interval(), CANCEL_NOTICE_S))
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    async def execute(run_id: str) -> str:
        work = asyncio.ensure_future(work_in_thread(run_id))
        beating = asyncio.create_task(beat())
        try:
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                return await work  # stop() is true now: the stage ends at its next check
        except Exception as exc:
            if activity.is_cancelled():
                raise CancelledError(f"stopped: the run was cancelled ({exc})") from exc
            raise
        finally:
            beating.cancel()

    execute.__name__ = execute.__qualname__ = stage
    return activity.defn(name=name)(execute)


AGENT_ACTIVITIES = [
    _agent_activity(name, stage) for name, stage in t.STAGES if name != t.CREATE_PULL_REQUEST
]
STAGE_ACTIVITIES = [
    *AGENT_ACTIVITIES,
    _worker_stage_activity(t.CREATE_PULL_REQUEST, t.STAGE_OF[t.CREATE_PULL_REQUEST]),
]


# --- bookkeeping activities (event loop) -----------------------------------------------


def bookkeeping_activity(name: str, fn, arg_type: type = str):
    """A sync service function as an activity run in the worker's event loop (via a thread)."""
    typed = _typed(None)(fn)

    def in_thread(arg):
        # As Django does around a request: this executor thread keeps its connection for the
        # next bookkeeping call (CONN_MAX_AGE), health-checked first, closed once too old.
        close_old_connections()
        try:
            return typed(arg)
        finally:
            close_old_connections()

    async def bookkeeping(arg):
        return await sync_to_async(in_thread, thread_sensitive=False)(arg)

    # Temporal decodes the argument by its annotation (dataclasses for approvals/failures).
    bookkeeping.__annotations__ = {"arg": arg_type, "return": object}
    bookkeeping.__name__ = bookkeeping.__qualname__ = name
    return activity.defn(name=name)(bookkeeping)


BOOKKEEPING_ACTIVITIES = [
    bookkeeping_activity(t.MARK_RUNNING, lifecycle.mark_running),
    bookkeeping_activity(t.ACQUIRE_SLOT, slots.slot_acquire),
    bookkeeping_activity(t.RELEASE_SLOT, slots.slot_release),
    bookkeeping_activity(t.MARK_PASSED, lifecycle.mark_passed),
    bookkeeping_activity(t.MARK_FAILED, lifecycle.mark_failed, t.Failure),
    bookkeeping_activity(t.MARK_CANCELLED, lifecycle.mark_cancelled),
    bookkeeping_activity(t.DISCARD_PULL_REQUEST, pull_requests.pull_request_discard),
    bookkeeping_activity(t.SKIP_VERIFICATION, pipeline.skip_verification),
]

ACTIVITIES = [*STAGE_ACTIVITIES, *BOOKKEEPING_ACTIVITIES]
