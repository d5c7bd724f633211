"""RunSteps: what every run's workflow does around its own stages, composed into each workflow
class (generation, maintenance, check): start (mark running, take the slot), a stage's
activity, an approval hold, and the end (passed, failed, cancelled) through EndRun.

Deterministic workflow code: no clock, randomness or I/O; every side effect, stage bookkeeping
included, is an activity scheduled by name, so no Django code enters the workflow sandbox. The
workflow alone decides how a run ends and says so through one activity, EndRun, which also
gives the run's slot back; no other activity ends a run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    is_cancelled_exception,
)
from temporalio.workflow import ActivityCancellationType

# ``import a.b.c``, not ``from a.b import c``: the sandbox passes through what ``__import__``
# asks for, but ``from`` loads the submodule through importlib's own path, which would run
# types.py again (its dataclasses built anew) for every workflow the worker starts.
with workflow.unsafe.imports_passed_through():
    import runs.temporal.types as t

PR_STAGE = t.STAGE_OF[t.CREATE_PULL_REQUEST]
# Cancelled, these are waited for: they stop before their next write, and what they wrote is
# taken back only then (a PR), or their report is not cut short (a check run's).
WAITED_FOR = (t.CREATE_PULL_REQUEST, t.OPEN_MAINTENANCE_PR, t.REPORT_CHECK_RUN)


def cause(err: BaseException) -> ApplicationError | None:
    """The ApplicationError an activity raised, under Temporal's wrapping."""
    while err is not None and not isinstance(err, ApplicationError):
        err = err.__cause__
    return err


def _failure(run_id: str, stage: str, err: FailureError) -> t.Failure:
    """The run's failure from an activity's error, on the stage of the activity that raised
    it (``stage``, the latest one begun, for any other error): a check run reports its tests'
    failure before the run ends with it, and that failure stays the tests'. An
    ApplicationError raised without a type (or with details that are not a mapping) is named
    by its class: EndRun's input must decode, or EndRun is retried forever."""
    if isinstance(err, ActivityError):
        stage = t.STAGE_OF.get(err.activity_type, stage)
    found = cause(err)
    if found is None:
        return t.Failure(run_id, stage, type(err).__name__, str(err))
    details = found.details[0] if found.details else {}
    return t.Failure(
        run_id,
        stage,
        found.type or type(found).__name__,
        found.message,
        details if isinstance(details, dict) else {},
    )


def _retry_policy(r: t.RetrySettings, maximum_attempts: int | None = None) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=r.initial_interval_s),
        backoff_coefficient=r.backoff_coefficient,
        maximum_interval=timedelta(seconds=r.maximum_interval_s),
        maximum_attempts=r.maximum_attempts if maximum_attempts is None else maximum_attempts,
        non_retryable_error_types=r.non_retryable_error_types,
    )


class _Rejected(Exception):
    """An approval that was rejected or expired: the run fails with ``failure``."""

    def __init__(self, failure: t.Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class RunSteps:
    """One run's steps, for the workflow that owns it. Built inside the workflow's run method:
    it answers the ``approval_decided`` signal and the ``stage`` query for that workflow."""

    def __init__(self, params: t.WorkflowParams) -> None:
        self.params = params
        self.run_id = params.run_id
        self.stage = ""
        # The stage a hold waits on, for the query: a check run's fork approval holds before
        # any activity ran. Apart from ``stage``, which decides what a cancel or a failure
        # does, as the released histories recorded it.
        self._holding = ""
        self._decision: t.ApprovalDecision | None = None
        self._retry = _retry_policy(params.retry)
        self._book_retry = _retry_policy(params.bookkeeping_retry)
        workflow.set_signal_handler(t.APPROVAL_SIGNAL, self._decided)
        workflow.set_query_handler("stage", lambda: self._holding or self.stage)

    def _decided(self, decision: t.ApprovalDecision) -> None:
        self._decision = decision

    async def run(
        self,
        stages: Callable[[], Awaitable[None]],
        *,
        after_cancel: Callable[[], Awaitable[None]] | None = None,
    ) -> str:
        """Start, the workflow's ``stages``, and the end they lead to: passed, failed (an
        activity's error or a rejected hold) or cancelled, then ``after_cancel``."""
        try:
            await self._start()
            await stages()
            # Cancelled before EndRun wrote "passed": the run ends cancelled, its PR taken back.
            await self._end(t.RunEnd(self.run_id, t.PASSED))
        except asyncio.CancelledError:
            await self._cancelled(after_cancel)
            raise
        except FailureError as err:  # a local activity's failure is not wrapped in ActivityError
            if is_cancelled_exception(err):  # the activity stopped for the cancel
                await self._cancelled(after_cancel)
                raise
            failure = _failure(self.run_id, self.stage, err)
            raise await self._failed(failure, f"{failure.error_type}: {failure.message}") from err
        except _Rejected as rejected:
            raise await self._failed(rejected.failure, rejected.failure.message) from None
        return t.PASSED

    async def activity(self, name: str, result_type: type = str):
        """A stage's activity, on the run's id."""
        self.stage = t.STAGE_OF[name]
        return await workflow.execute_activity(
            name,
            self.run_id,
            result_type=result_type,
            start_to_close_timeout=timedelta(seconds=self.params.agent_timeout_s),
            heartbeat_timeout=timedelta(seconds=self.params.heartbeat_timeout_s),
            retry_policy=self._retry,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
            if name in WAITED_FOR
            else ActivityCancellationType.TRY_CANCEL,
        )

    async def hold(
        self,
        stage: str,
        approver: str,
        comment: str,
        *,
        report: Callable[[str, str], Awaitable[None]] | None = None,
    ) -> None:
        """Hold ``stage`` (it waits, ``awaiting_approval``): write the approvals row, wait for
        the decision signal (or the timeout); a rejected or expired approval fails the run on
        that stage. ``report(state, message)``, when given, is awaited once the approval is
        requested (``held``) and once it is decided (``approved`` with who approved,
        ``rejected`` or ``expired`` with the run's failure message, before the run fails)."""
        self._holding = stage
        try:
            await self._hold(stage, approver, comment, report)
        finally:
            self._holding = ""

    async def _hold(
        self,
        stage: str,
        approver: str,
        comment: str,
        report: Callable[[str, str], Awaitable[None]] | None,
    ) -> None:
        self._decision = None
        request = t.ApprovalRequest(self.run_id, approver, comment, stage)
        approval_id = await self._local(t.REQUEST_APPROVAL, request, self._book_retry)
        if report is not None:
            await report(t.HOLD_HELD, "")
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None and self._decision.approval_id == approval_id,
                timeout=timedelta(seconds=self.params.approval_timeout_s),
            )
        except TimeoutError:
            await self._local(t.EXPIRE_APPROVAL, approval_id, self._book_retry)
            failure = t.Failure(
                self.run_id,
                stage,
                "ApprovalTimedOut",
                f"nobody decided the {approver} approval within "
                f"{self.params.approval_timeout_s:.0f} s; start a new run",
            )
            if report is not None:
                await report(t.HOLD_EXPIRED, failure.message)
            raise _Rejected(failure) from None
        by = self._decision.decided_by or "an approver"
        if self._decision.decision != "approved":
            failure = t.Failure(
                self.run_id,
                stage,
                "ApprovalRejected",
                f"rejected by {by}: {self._decision.comment or '(no comment)'}",
            )
            if report is not None:
                await report(t.HOLD_REJECTED, failure.message)
            raise _Rejected(failure)
        if report is not None:
            await report(t.HOLD_APPROVED, f"approved by {by}")

    async def aside(self, name: str, arg) -> object:
        """An activity beside the stages (no stage of its own: ``stage``, which decides what a
        failure or a cancel does, stays as it is). A cancel waits for it to stop, so what it
        writes is not cut short and nothing written for the cancel comes before it."""
        return await workflow.execute_activity(
            name,
            arg,
            start_to_close_timeout=timedelta(seconds=self.params.agent_timeout_s),
            heartbeat_timeout=timedelta(seconds=self.params.heartbeat_timeout_s),
            retry_policy=self._retry,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )

    async def _start(self) -> None:
        """Mark the run running and take its slot: one quick local try, then, when that did
        not work (the repository runs its maximum, or PostgreSQL or Valkey is away), the same
        as a regular activity, retried without a cap for up to ``slot_wait_s``."""
        try:
            return await self._local(t.START_RUN, self.run_id, RetryPolicy(maximum_attempts=1))
        except FailureError as err:
            if is_cancelled_exception(err):
                raise
        await workflow.execute_activity(
            t.START_RUN,
            self.run_id,
            start_to_close_timeout=timedelta(seconds=self.params.bookkeeping_timeout_s),
            schedule_to_close_timeout=timedelta(seconds=self.params.slot_wait_s),
            retry_policy=_retry_policy(self.params.retry, maximum_attempts=0),
        )

    async def _end(self, end: t.RunEnd) -> None:
        """The run's end, as decided here, and its slot given back: one local activity,
        retried without a cap (an outage only delays it)."""
        await self._local(t.END_RUN, end, self._book_retry)

    async def _failed(self, failure: t.Failure, message: str) -> ApplicationError:
        """Failed with ``failure``; the workflow's own failure (``message``) to raise."""
        await self._end(t.RunEnd(self.run_id, t.FAILED, failure))
        return ApplicationError(message, type=failure.error_type, non_retryable=True)

    async def _cancelled(self, after_cancel: Callable[[], Awaitable[None]] | None) -> None:
        """Cancelled; what a pull request stage wrote (it stopped before this) is taken back,
        then the workflow's ``after_cancel``."""
        await self._end(t.RunEnd(self.run_id, t.CANCELLED))
        if self.stage == PR_STAGE:
            try:
                await self._local(t.DISCARD_PULL_REQUEST, self.run_id, self._book_retry)
            except FailureError as err:  # the run is cancelled; the host keeps what it has
                workflow.logger.warning("could not take back run %s's PR: %s", self.run_id, err)
        if after_cancel is not None:
            await after_cancel()

    def _local(self, name: str, arg, retry: RetryPolicy):
        """A bookkeeping activity: local (run by this worker, recorded as a marker)."""
        return workflow.execute_local_activity(
            name,
            arg,
            start_to_close_timeout=timedelta(seconds=self.params.bookkeeping_timeout_s),
            retry_policy=retry,
        )
