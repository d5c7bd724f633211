"""Temporal activities: thin wrappers over runs.pipeline and runs.transitions.

Where each runs:

- the agent stages (CrawlRepo, GenerateTestCases, GenerateTestCode), methods of
  :class:`AgentActivities`: begun and stored by the worker, in a worker thread, while the agent
  runs in a fresh process of the worker's pool (``max_tasks_per_child=1``);
- VerifyTests (:meth:`AgentActivities.verify_tests`): in a worker thread, the tests in the
  sandbox, each healing session (an agent) in a fresh process of that pool;
- ExploreApp (:func:`explore_app`) and CreatePullRequest (:func:`create_pull_request`): in a
  worker thread (no LLM session, so no process of their own; the browser is in the sandbox);
- the bookkeeping (:func:`start_run`, :func:`end_run`, :func:`discard_pull_request`): in a
  worker thread, as local activities of the workflow.

Every failure reaches Temporal typed and bounded (:mod:`runs.temporal.failures`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import time

from asgiref.sync import sync_to_async
from django.db import connections
from temporalio import activity
from temporalio.exceptions import CancelledError

from repositories.schedules import START_SCHEDULED_MAINTENANCE
from runs import checks, maintenance, pipeline, pull_requests, slots, transitions
from runs.temporal import types as t
from runs.temporal.agent_gate import beat_interval
from runs.temporal.failures import activity_failure, bounded, stage_failure
from triggers import maintenance as maintenance_starts

# Heartbeats also carry a cancel request to the agent process (the answer to a heartbeat
# says so): at least this often, and the worker sends them on as often (worker.py).
CANCEL_NOTICE_S = 5.0


def _in_thread(fn):
    """``fn`` as a coroutine function run in one of the worker's threads (the event loop's
    executor). The thread keeps its database connection for the next call (CONN_MAX_AGE)."""

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
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


async def bookkeeping(fn, arg):
    """``fn(arg)``, a service function, in a worker thread; its failure typed for Temporal."""
    try:
        return await _in_thread(fn)(arg)
    except Exception as raised:
        raise activity_failure(raised) from None


async def _beat() -> None:
    """Heartbeat from the worker while an activity runs there (the answer to a heartbeat is
    how a cancel request arrives). The first one after an interval, not at once: most stages
    end well within it, and each heartbeat is a call to Temporal."""
    every = max(1.0, min(beat_interval(), CANCEL_NOTICE_S))
    while True:
        await asyncio.sleep(every)
        activity.heartbeat()


# --- the agent stages (their agents in the pool) ----------------------------------------


class AgentActivities:
    """The agent stages of a worker whose agent processes come from ``pool``. The agent
    process needs no database connection: the worker loads its input and stores its answer.
    Heartbeats come from the worker meanwhile. A cancel stops waiting for the agent: what it
    answers after is not stored. An agent process that dies fails the attempt with the
    retryable ``AgentProcessDied``; nothing of it was stored, so the retry asks again."""

    def __init__(self, pool: concurrent.futures.Executor) -> None:
        self.pool = pool

    @activity.defn(name=t.CRAWL_REPO)
    async def crawl_repo(self, run_id: str) -> t.RepoMap:
        """The repository map, then whether BootApp and ExploreApp are skipped (decided and
        closed here)."""
        artifact_id = await self._stage(t.CRAWL_REPO, run_id)
        boot_skipped = await bookkeeping(pipeline.skip_boot, run_id)
        skipped = await bookkeeping(pipeline.skip_exploration, run_id)
        return t.RepoMap(artifact_id, skipped, boot_skipped)

    @activity.defn(name=t.GENERATE_TEST_CASES)
    async def generate_test_cases(self, run_id: str) -> str:
        return await self._stage(t.GENERATE_TEST_CASES, run_id)

    @activity.defn(name=t.GENERATE_TEST_CODE)
    async def generate_test_code(self, run_id: str) -> t.TestCode:
        """The code, then whether VerifyTests is skipped (decided and closed here)."""
        artifact_id = await self._stage(t.GENERATE_TEST_CODE, run_id)
        skipped = await bookkeeping(pipeline.skip_verification, run_id)
        return t.TestCode(artifact_id, skipped)

    async def _stage(self, name: str, run_id: str) -> str:
        beating = asyncio.create_task(_beat())
        try:
            step = await _in_thread(pipeline.agent_step)(name, run_id)
            if isinstance(step, str):  # stored by an earlier attempt
                return step
            # Submitting may start the agent template (a forkserver that sets Django up and
            # imports the agent stack: seconds), so it happens off the event loop, which
            # keeps heartbeating meanwhile.
            submitted = await asyncio.to_thread(self.pool.submit, step.call)
            result = await asyncio.wrap_future(submitted)
            return await _in_thread(pipeline.agent_store)(step, result)
        except Exception as raised:
            raise await _in_thread(stage_failure)(raised, run_id, t.STAGE_OF[name]) from None
        finally:
            beating.cancel()

    @activity.defn(name=t.VERIFY_TESTS)
    async def verify_tests(self, run_id: str) -> str:
        """Driven from a worker thread (the generated tests run in the sandbox, a process tree
        of their own); each healing session in a fresh process of the pool. The gate holds a
        process for the stage, so a heal never waits behind other runs' agents."""
        verify = functools.partial(pipeline.verify_tests, sessions=self.pool)
        return await _stage_in_thread(t.VERIFY_TESTS, verify, run_id)

    @activity.defn(name=t.REVERIFY_TESTS)
    async def reverify_tests(self, run_id: str) -> t.Reverified:
        """A maintenance or check run's tests, as VerifyTests runs them (heals in the pool)."""
        reverify = functools.partial(_reverify, sessions=self.pool)
        return t.Reverified(*await _stage_in_thread(t.REVERIFY_TESTS, reverify, run_id))

    def all(self) -> list:
        return [
            self.crawl_repo,
            self.generate_test_cases,
            self.generate_test_code,
            self.verify_tests,
            self.reverify_tests,
        ]


def _reverify(run_id: str, *, sessions, stop) -> tuple[str, bool]:
    return maintenance.reverify_tests(run_id, sessions=sessions, stop=stop)


def _stopped(exc: Exception) -> CancelledError:
    return CancelledError(bounded(f"stopped: the run was cancelled ({exc})"))


# --- ExploreApp and CreatePullRequest (a worker thread each) ------------------------------


@activity.defn(name=t.BOOT_APP)
async def boot_app(run_id: str) -> str:
    """The run's own app booted in the sandbox from a worker thread, then stopped."""
    return await _stage_in_thread(t.BOOT_APP, pipeline.boot_app, run_id)


@activity.defn(name=t.EXPLORE_APP)
async def explore_app(run_id: str) -> str:
    """The sandboxed browser driven from a worker thread."""
    return await _stage_in_thread(t.EXPLORE_APP, pipeline.explore_app, run_id)


async def _stage_in_thread(name: str, stage, run_id: str) -> str:
    """``stage(run_id, stop=...)`` in a worker thread, heartbeating from the event loop; a
    cancel reaches it through ``stop`` (it stores nothing after), and its failure is typed
    and recorded on the stage."""
    beating = asyncio.create_task(_beat())
    try:
        return await _in_thread(stage)(run_id, stop=activity.is_cancelled)
    except Exception as raised:
        if activity.is_cancelled():
            raise _stopped(raised) from None
        raise await _in_thread(stage_failure)(raised, run_id, t.STAGE_OF[name]) from None
    finally:
        beating.cancel()


def _open_pull_request(run_id: str, name: str = t.CREATE_PULL_REQUEST) -> str:
    opener = {
        t.CREATE_PULL_REQUEST: pipeline.create_pull_request,
        t.OPEN_MAINTENANCE_PR: maintenance.maintenance_pull_request,
        t.REPORT_CHECK_RUN: _report_check,
    }[name]
    try:
        return opener(run_id, stop=activity.is_cancelled)
    except Exception as raised:
        raise stage_failure(raised, run_id, t.STAGE_OF[name]) from None


@activity.defn(name=t.CREATE_PULL_REQUEST)
async def create_pull_request(run_id: str) -> str:
    """Open the PR in a worker thread, heartbeating from the event loop. A cancel request
    reaches the stage through ``stop`` (it checks before writing), and the activity ends only
    once the stage has stopped: the workflow takes back what is left after that, never while
    it is written."""
    return await _pull_request_activity(run_id, t.CREATE_PULL_REQUEST)


@activity.defn(name=t.OPEN_MAINTENANCE_PR)
async def open_maintenance_pull_request(run_id: str) -> str:
    """A maintenance run's PR, opened as CreatePullRequest opens a generation run's."""
    return await _pull_request_activity(run_id, t.OPEN_MAINTENANCE_PR)


@activity.defn(name=t.REPORT_CHECK_RUN)
async def report_check_run(run_id: str) -> str:
    """A check run's result reported on GitHub, from a worker thread. Like a pull request, a
    report under way when a cancel arrives is finished, not cut between its writes: the
    cancel's own report (``cancelled``) then finds it complete and leaves it."""
    return await _pull_request_activity(run_id, t.REPORT_CHECK_RUN)


def _report_check(run_id: str, *, stop) -> str:
    return checks.check_run_report(run_id)


async def _pull_request_activity(run_id: str, name: str) -> str:
    return await _finished(_in_thread(_open_pull_request)(run_id, name))


async def _finished(call) -> str:
    """Await ``call``, heartbeating; a cancel does not cut it short: it is awaited to its end
    (its ``stop()`` is true then, for a stage that checks it before each write)."""
    work = asyncio.ensure_future(call)
    beating = asyncio.create_task(_beat())
    try:
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            return await work  # stop() is true now: the stage ends at its next check
    except Exception as exc:
        if activity.is_cancelled():
            raise _stopped(exc) from None
        raise
    finally:
        beating.cancel()


def _report_hold(hold: t.CheckRunHold) -> str:
    return checks.check_run_hold_report(hold.run_id, hold.state, hold.message)


@activity.defn(name=t.REPORT_CHECK_RUN_HOLD)
async def report_check_run_hold(hold: t.CheckRunHold) -> str:
    """A held check run's state on GitHub (queued while it waits, in progress once approved,
    completed when rejected or expired), from a worker thread; no stage of its own. A report
    under way when a cancel arrives is finished: the cancel's report then completes the check
    run after it, never before."""
    return await _finished(bookkeeping(_report_hold, hold))


# --- bookkeeping (local activities, a worker thread) -------------------------------------


def _start(run_id: str) -> None:
    transitions.run_running(run_id)
    slots.slot_acquire(run_id)


@activity.defn(name=t.START_RUN)
async def start_run(run_id: str) -> None:
    """The run marked running, then its slot taken (either may be repeated)."""
    await bookkeeping(_start, run_id)


def _end(end: t.RunEnd) -> bool:
    return transitions.run_end(run_id=end.run_id, status=end.status, failure=end.failure)


@activity.defn(name=t.END_RUN)
async def end_run(end: t.RunEnd) -> bool:
    """The run's end as the workflow decided it, and its slot given back."""
    return await bookkeeping(_end, end)


@activity.defn(name=t.DISCARD_PULL_REQUEST)
async def discard_pull_request(run_id: str) -> bool:
    """A cancelled run's PR closed and its head branch deleted."""
    return await bookkeeping(pull_requests.pull_request_discard, run_id)


def _scheduled(start: t.ScheduledStart) -> str:
    return maintenance_starts.scheduled_maintenance_start(
        repository_id=start.repository_id, key=start.key
    )


@activity.defn(name=START_SCHEDULED_MAINTENANCE)
async def start_scheduled_maintenance(start: t.ScheduledStart) -> str:
    """A maintenance schedule's firing made a run (its id), or why not."""
    return await bookkeeping(_scheduled, start)


ACTIVITIES = [
    boot_app,
    explore_app,
    create_pull_request,
    open_maintenance_pull_request,
    report_check_run,
    report_check_run_hold,
    start_run,
    end_run,
    discard_pull_request,
    start_scheduled_maintenance,
]
