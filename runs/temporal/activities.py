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
import time
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connections
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


def _temporal_error(raised: BaseException, arg, stage: str | None) -> BaseException | None:
    """What Temporal is told of ``raised`` (AmtpError → ApplicationError, carrying its type,
    retryability and details), after the attempt's error is recorded on the stage; None: raise
    it as it is. An AmtpError wrapped in an exception group or a ``__cause__`` chain keeps its
    class: a final error raised inside a task group is not retried."""
    exc = raised if isinstance(raised, AmtpError) else amtp_error_in(raised)
    if exc is None:
        if stage and isinstance(raised, Exception):
            _note_error(arg, stage, type(raised).__name__, str(raised))
        return None
    if stage:
        _note_error(arg, stage, type(exc).__name__, exc.message)
    retry_after = exc.details.get("retry_after")
    error = ApplicationError(
        exc.message,
        exc.to_dict(),
        type=type(exc).__name__,
        non_retryable=not exc.retryable,
        next_retry_delay=timedelta(seconds=retry_after) if retry_after else None,
    )
    error.__cause__ = exc
    return error


def _typed(stage: str | None):
    """``fn(arg)`` whose errors Temporal sees typed (:func:`_temporal_error`)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(arg):
            try:
                return fn(arg)
            except BaseException as raised:
                error = _temporal_error(raised, arg, stage)
                if error is None:
                    raise
                raise error from error.__cause__

        return inner

    return wrap


def _in_thread(fn):
    """``fn`` as a coroutine function run in one of the worker's threads (the event loop's
    executor). The thread keeps its database connection for the next call (CONN_MAX_AGE)."""

    def call(*args):
        try:
            return fn(*args)
        finally:
            _tidy_connections()

    return sync_to_async(call, thread_sensitive=False)


def _tidy_connections() -> None:
    """After a call: close this thread's connection if it failed or is too old, as Django
    does after a request. Unlike ``close_old_connections``, a healthy one is not marked for a
    health check, which would cost every call a ``SELECT 1`` round trip: a connection that
    broke meanwhile (PostgreSQL restarted) fails its next call, is closed here, and the retry
    connects again."""
    now = time.monotonic()
    for conn in connections.all(initialized_only=True):
        if conn.errors_occurred or (conn.close_at is not None and now >= conn.close_at):
            conn.close_if_unusable_or_obsolete()


async def _beat() -> None:
    """Heartbeat from the worker while an activity runs there (the answer to a heartbeat is
    how a cancel request arrives). The first one after an interval, not at once: most stages
    end well within it, and each heartbeat is a call to Temporal."""
    every = max(1.0, min(beat_interval(), CANCEL_NOTICE_S))
    while True:
        await asyncio.sleep(every)
        activity.heartbeat()


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

    def stage(run_id: str) -> str | dict:
        return stage_fn(run_id, stop=activity.is_cancelled)

    return stage


def _pool_activity(name: str, stage: str):
    """``pipeline.<stage>`` as an activity run whole in a fresh process of the worker's pool
    (VerifyTests: its Playwright runs and healing session). The pool pickles an activity by
    module and name, so it is published here as ``activities.<stage>``."""
    fn = _heartbeating(_typed(stage)(_stoppable(getattr(pipeline, stage))))
    fn.__module__, fn.__name__, fn.__qualname__ = __name__, stage, stage
    globals()[stage] = fn
    return activity.defn(name=name)(fn)


def _agent_activity(name: str, pool: concurrent.futures.Executor):
    """The agent stage ``name``: begun and stored by the worker, in a worker thread (the
    run's rows, the upstream artifact, the idempotency key, the validated output), while its
    agent runs in a fresh process of ``pool`` that needs no database connection. Heartbeats
    come from the worker meanwhile. A cancel stops waiting for the agent: what it answers
    after is not stored. An agent process that dies fails the attempt with the retryable
    ``AgentProcessDied``; nothing of it was stored, so the retry calls the model again."""
    stage = t.STAGE_OF[name]
    begin, store = _in_thread(pipeline.agent_step), _in_thread(pipeline.agent_store)

    async def execute(run_id: str) -> str | dict:
        beating = asyncio.create_task(_beat())
        try:
            step = await begin(name, run_id)
            if isinstance(step, str):  # stored by an earlier attempt
                return step
            result = await asyncio.wrap_future(pool.submit(step.call))
            return await store(step, result)
        except Exception as raised:
            error = await _in_thread(_temporal_error)(raised, run_id, stage)
            if error is None:
                raise
            raise error from error.__cause__
        finally:
            beating.cancel()

    execute.__name__ = execute.__qualname__ = stage
    execute.uses_agent_process = True  # AgentPoolGate admits it as the pool has room
    return activity.defn(name=name)(execute)


def agent_activities(pool: concurrent.futures.Executor) -> list:
    """The agent activities of a worker whose agent processes come from ``pool``."""
    return [_agent_activity(name, pool) for name in pipeline.AGENTS]


# --- CreatePullRequest (a worker thread) -----------------------------------------------


def _worker_stage_activity(name: str, stage: str):
    """``pipeline.<stage>`` as an activity run in a worker thread, heartbeating from the
    event loop: CreatePullRequest, which is not an agent (no LLM session, so no fresh process
    of its own). A cancel request reaches the stage through ``stop`` (it checks before
    writing and takes back what it wrote), and the activity ends only once the stage has
    stopped: the workflow takes back what is left after that, never while it is written."""
    work_in_thread = _in_thread(_typed(stage)(_stoppable(getattr(pipeline, stage))))

    async def execute(run_id: str) -> str | dict:
        work = asyncio.ensure_future(work_in_thread(run_id))
        beating = asyncio.create_task(_beat())
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


STAGE_ACTIVITIES = [
    _pool_activity(t.VERIFY_TESTS, t.STAGE_OF[t.VERIFY_TESTS]),
    _worker_stage_activity(t.CREATE_PULL_REQUEST, t.STAGE_OF[t.CREATE_PULL_REQUEST]),
]


# --- bookkeeping activities (event loop) -----------------------------------------------


def bookkeeping_activity(name: str, fn, arg_type: type = str):
    """A sync service function as an activity run in the worker's event loop (via a thread)."""
    in_thread = _in_thread(_typed(None)(fn))

    async def bookkeeping(arg):
        return await in_thread(arg)

    # Temporal decodes the argument by its annotation (dataclasses for approvals/failures).
    bookkeeping.__annotations__ = {"arg": arg_type, "return": object}
    bookkeeping.__name__ = bookkeeping.__qualname__ = name
    return activity.defn(name=name)(bookkeeping)


def start_run(run_id: str) -> None:
    """The run marked running, then its slot taken (either may be repeated)."""
    lifecycle.mark_running(run_id)
    slots.slot_acquire(run_id)


def finish_run(run_id: str) -> None:
    """The run marked passed, then its slot given back (either may be repeated)."""
    lifecycle.mark_passed(run_id)
    slots.slot_release(run_id)


BOOKKEEPING_ACTIVITIES = [
    bookkeeping_activity(t.START_RUN, start_run),
    bookkeeping_activity(t.FINISH_RUN, finish_run),
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
