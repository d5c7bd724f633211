"""TestGenerationWorkflow: deterministic sequencing of the three agents, VerifyTests and the PR.

No clock, randomness or I/O here: every side effect, stage bookkeeping included, is an
activity, referred to by name so no Django code enters the workflow sandbox. The workflow
alone decides how a run ends (passed, failed, cancelled) and says so through one activity,
EndRun, which also gives the run's slot back; no other activity ends a run.
"""

from __future__ import annotations

import asyncio
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

POLICY_APPROVAL = "The repository requires a human approval before AMTP opens a pull request."
PR_STAGE = t.STAGE_OF[t.CREATE_PULL_REQUEST]


def _cause(err: BaseException) -> ApplicationError | None:
    while err is not None and not isinstance(err, ApplicationError):
        err = err.__cause__
    return err


def _failure(run_id: str, stage: str, err: FailureError) -> t.Failure:
    cause = _cause(err)
    return t.Failure(
        run_id,
        stage,
        cause.type if cause else type(err).__name__,
        cause.message if cause else str(err),
        (cause.details or [{}])[0] if cause and cause.details else {},
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


@workflow.defn(name=t.WORKFLOW_NAME)
class TestGenerationWorkflow:
    __test__ = False  # a product class, not a pytest test class

    def __init__(self) -> None:
        self._decision: t.ApprovalDecision | None = None
        self._stage = ""

    @workflow.signal(name=t.APPROVAL_SIGNAL)
    def approval_decided(self, decision: t.ApprovalDecision) -> None:
        self._decision = decision

    @workflow.query(name="stage")
    def stage(self) -> str:
        return self._stage

    @workflow.run
    async def run(self, params: t.WorkflowParams) -> str:
        self.params = params
        self.retry = _retry_policy(params.retry)
        self.book_retry = _retry_policy(params.bookkeeping_retry)
        run_id = params.run_id
        try:
            await self._start(run_id)
            await self._stages(run_id)
            # Cancelled before EndRun wrote "passed": the run ends cancelled, its PR taken back.
            await self._end(t.RunEnd(run_id, t.PASSED))
        except asyncio.CancelledError:
            await self._cancelled(run_id)
            raise
        except FailureError as err:  # a local activity's failure is not wrapped in ActivityError
            if is_cancelled_exception(err):  # the activity stopped for the cancel
                await self._cancelled(run_id)
                raise
            failure = _failure(run_id, self._stage, err)
            raise await self._failed(failure, f"{failure.error_type}: {failure.message}") from err
        except _Rejected as rejected:
            raise await self._failed(rejected.failure, rejected.failure.message) from None
        return t.PASSED

    async def _stages(self, run_id: str) -> None:
        repo = await self._activity(t.CRAWL_REPO, run_id, result_type=t.RepoMap)
        if not repo.boot_skipped:
            await self._activity(t.BOOT_APP, run_id)
        if not repo.exploration_skipped:
            await self._activity(t.EXPLORE_APP, run_id)
        await self._activity(t.GENERATE_TEST_CASES, run_id)
        code = await self._activity(t.GENERATE_TEST_CODE, run_id, result_type=t.TestCode)
        if not code.verification_skipped:
            await self._activity(t.VERIFY_TESTS, run_id)
        if self.params.require_approval:
            await self._hold(t.ApprovalRequest(run_id, "policy", POLICY_APPROVAL))
        await self._pull_request(run_id)

    async def _start(self, run_id: str) -> None:
        """Mark the run running and take its slot: one quick local try, then, when that did
        not work (the repository runs its maximum, or PostgreSQL or Valkey is away), the same
        as a regular activity, retried without a cap for up to ``slot_wait_s``."""
        try:
            return await self._local(t.START_RUN, run_id, RetryPolicy(maximum_attempts=1))
        except FailureError as err:
            if is_cancelled_exception(err):
                raise
        await workflow.execute_activity(
            t.START_RUN,
            run_id,
            start_to_close_timeout=timedelta(seconds=self.params.bookkeeping_timeout_s),
            schedule_to_close_timeout=timedelta(seconds=self.params.slot_wait_s),
            retry_policy=_retry_policy(self.params.retry, maximum_attempts=0),
        )

    async def _end(self, end: t.RunEnd) -> None:
        """The run's end, as decided here, and its slot given back: one local activity,
        retried without a cap (an outage only delays it)."""
        await self._local(t.END_RUN, end, self.book_retry)

    async def _failed(self, failure: t.Failure, message: str) -> ApplicationError:
        """Failed with ``failure``; the workflow's own failure (``message``) to raise."""
        await self._end(t.RunEnd(failure.run_id, t.FAILED, failure))
        return ApplicationError(message, type=failure.error_type, non_retryable=True)

    async def _cancelled(self, run_id: str) -> None:
        """Cancelled; what CreatePullRequest wrote (it stopped before this) is taken back."""
        await self._end(t.RunEnd(run_id, t.CANCELLED))
        if self._stage == PR_STAGE:
            try:
                await self._local(t.DISCARD_PULL_REQUEST, run_id, self.book_retry)
            except FailureError as err:  # the run is cancelled; the host keeps what it has
                workflow.logger.warning("could not take back run %s's PR: %s", run_id, err)

    async def _pull_request(self, run_id: str) -> None:
        """Open the PR; while branch protection refuses it, hold for an approval and retry."""
        while True:
            try:
                return await self._activity(t.CREATE_PULL_REQUEST, run_id)
            except ActivityError as err:
                cause = _cause(err)
                if cause is None or cause.type != "BranchProtectionViolation":
                    raise
                body = (cause.details or [{}])[0].get("body", cause.message)
                await self._hold(t.ApprovalRequest(run_id, "branch-protection", body))

    def _local(self, name: str, arg, retry: RetryPolicy):
        """A bookkeeping activity: local (run by this worker, recorded as a marker)."""
        return workflow.execute_local_activity(
            name,
            arg,
            start_to_close_timeout=timedelta(seconds=self.params.bookkeeping_timeout_s),
            retry_policy=retry,
        )

    async def _activity(self, name: str, run_id: str, result_type: type = str):
        """A stage's activity. CreatePullRequest, cancelled, is waited for: it stops before
        its next write, and what it wrote is taken back only then (``_cancelled``). So is a
        check run's report, which a cancel does not cut short."""
        self._stage = t.STAGE_OF[name]
        return await workflow.execute_activity(
            name,
            run_id,
            result_type=result_type,
            start_to_close_timeout=timedelta(seconds=self.params.agent_timeout_s),
            heartbeat_timeout=timedelta(seconds=self.params.heartbeat_timeout_s),
            retry_policy=self.retry,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
            if name in (t.CREATE_PULL_REQUEST, t.OPEN_MAINTENANCE_PR, t.REPORT_CHECK_RUN)
            else ActivityCancellationType.TRY_CANCEL,
        )

    async def _hold(self, request: t.ApprovalRequest) -> None:
        """Write the approvals row, wait for the decision signal (or the timeout)."""
        self._decision = None
        approval_id = await self._local(t.REQUEST_APPROVAL, request, self.book_retry)
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None and self._decision.approval_id == approval_id,
                timeout=timedelta(seconds=self.params.approval_timeout_s),
            )
        except TimeoutError:
            await self._local(t.EXPIRE_APPROVAL, approval_id, self.book_retry)
            raise _Rejected(
                t.Failure(
                    request.run_id,
                    PR_STAGE,
                    "ApprovalTimedOut",
                    f"nobody decided the {request.approver} approval within "
                    f"{self.params.approval_timeout_s:.0f} s; start a new run",
                )
            ) from None
        if self._decision.decision != "approved":
            by = self._decision.decided_by or "an approver"
            raise _Rejected(
                t.Failure(
                    request.run_id,
                    PR_STAGE,
                    "ApprovalRejected",
                    f"rejected by {by}: {self._decision.comment or '(no comment)'}",
                )
            )
