"""TestGenerationWorkflow: deterministic sequencing of the three agents and the PR (spec 003).

No clock, randomness or I/O here: every side effect, stage bookkeeping included, is an
activity, referred to by name so no Django code enters the workflow sandbox.
"""

from __future__ import annotations

import asyncio
import dataclasses
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
# Bookkeeping retries without an attempt cap (params.bookkeeping_retry); runs whose history
# predates it keep retrying bookkeeping with the agents' policy.
BOOKKEEPING_RETRY_PATCH = "bookkeeping-retry-without-cap"


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


def _retry_policy(r: t.RetrySettings) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=r.initial_interval_s),
        backoff_coefficient=r.backoff_coefficient,
        maximum_interval=timedelta(seconds=r.maximum_interval_s),
        maximum_attempts=r.maximum_attempts,
        non_retryable_error_types=r.non_retryable_error_types,
    )


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
        # Runs started from now on take every change below at once, recorded as one marker,
        # and start and finish in one step each; older runs replay each change as they
        # recorded it (or did not).
        self._current = workflow.patched(t.CURRENT_PATCH)
        # A cancel waits for CreatePullRequest to stop, then takes back what it wrote.
        self._cancel_stops_pr = self._patched(t.CANCEL_PATCH)
        self._local = self._patched(t.LOCAL_BOOKKEEPING_PATCH)
        run_id = params.run_id
        slot = False
        try:
            started = False
            if self._current:  # one step to start, one to finish
                slot = True
                started = await self._start(run_id)
            if not started:
                await self._book(t.MARK_RUNNING, run_id)
                slot = True
                await self._acquire_slot(run_id, quick=not self._current)
            for name in t.AGENT_STAGES:
                code = await self._agent(name, run_id)  # the last one's answer: code
            if self._patched(t.VERIFY_PATCH) and not _said(code, t.VERIFICATION_SKIPPED):
                await self._verify(run_id)
            if params.require_approval:
                await self._hold(t.ApprovalRequest(run_id, "policy", POLICY_APPROVAL))
            if _said(await self._pull_request(run_id), t.RUN_PASSED):
                slot = False  # marked passed and given back by CreatePullRequest
            elif self._current:
                await self._book(t.FINISH_RUN, run_id)
                slot = False  # given back
            else:
                await self._book(t.MARK_PASSED, run_id)
            return "passed"
        except asyncio.CancelledError:
            await self._cancelled(run_id)
            raise
        except FailureError as err:  # a local activity's failure is not wrapped in ActivityError
            if self._cancel_stops_pr and is_cancelled_exception(err):
                await self._cancelled(run_id)  # the activity stopped for the cancel
                raise
            failure = _failure(run_id, self._stage, err)
            await self._book(t.MARK_FAILED, failure)
            raise ApplicationError(
                f"{failure.error_type}: {failure.message}",
                type=failure.error_type,
                non_retryable=True,
            ) from err
        except _Rejected as rejected:
            await self._book(t.MARK_FAILED, rejected.failure)
            raise ApplicationError(
                rejected.failure.message, type=rejected.failure.error_type, non_retryable=True
            ) from None
        finally:
            if slot:
                await self._book(t.RELEASE_SLOT, run_id)

    async def _pull_request(self, run_id: str):
        """Open the PR; while branch protection refuses it, hold for an approval and retry.
        CreatePullRequest's answer."""
        while True:
            try:
                return await self._agent(t.CREATE_PULL_REQUEST, run_id)
            except ActivityError as err:
                cause = _cause(err)
                if cause is None or cause.type != "BranchProtectionViolation":
                    raise
                body = (cause.details or [{}])[0].get("body", cause.message)
                await self._hold(t.ApprovalRequest(run_id, "branch-protection", body))

    async def _verify(self, run_id: str) -> None:
        if self._local:
            self._stage = t.STAGE_OF[t.VERIFY_TESTS]
            if await self._execute(t.SKIP_VERIFICATION, run_id, self._bookkeeping_retry()):
                return
        await self._agent(t.VERIFY_TESTS, run_id)

    def _patched(self, patch_id: str) -> bool:
        """A change made before ``CURRENT_PATCH``: taken by every run started since that one
        without a marker of its own (each marker is a history event, and the server also
        upserts a search attribute for it); a run started before replays its own marker."""
        return self._current or workflow.patched(patch_id)

    def _bookkeeping_retry(self) -> RetryPolicy:
        return self.book_retry if self._patched(BOOKKEEPING_RETRY_PATCH) else self.retry

    async def _cancelled(self, run_id: str) -> None:
        await self._book(t.MARK_CANCELLED, run_id)
        if self._cancel_stops_pr and self._stage == t.STAGE_OF[t.CREATE_PULL_REQUEST]:
            try:
                await self._book(t.DISCARD_PULL_REQUEST, run_id)
            except FailureError as err:  # the run is cancelled; the host keeps what it has
                workflow.logger.warning("could not take back run %s's PR: %s", run_id, err)

    async def _start(self, run_id: str) -> bool:
        """Mark the run running and take its slot in one quick local activity; False when
        that did not work (the repository is full, or the database or Valkey is away): the
        two steps then run apart, each retried, and a full repository is waited for."""
        try:
            await self._execute(t.START_RUN, run_id, RetryPolicy(maximum_attempts=1))
        except FailureError as err:
            if is_cancelled_exception(err):
                raise
            return False
        return True

    async def _acquire_slot(self, run_id: str, quick: bool = True) -> None:
        """While the repository runs its maximum, wait (for up to ``slot_wait_s``) instead of
        failing after the general policy's attempts. ``quick``: one local try first."""
        if not self._patched(t.SLOT_WAIT_PATCH):
            return await self._book(t.ACQUIRE_SLOT, run_id)
        if self._local and quick:  # one quick try here; a full repository is waited for below
            try:
                return await self._execute(t.ACQUIRE_SLOT, run_id, RetryPolicy(maximum_attempts=1))
            except FailureError:
                pass
        r = self.params.retry
        await workflow.execute_activity(
            t.ACQUIRE_SLOT,
            run_id,
            start_to_close_timeout=timedelta(seconds=self.params.bookkeeping_timeout_s),
            schedule_to_close_timeout=timedelta(seconds=self.params.slot_wait_s),
            retry_policy=_retry_policy(dataclasses.replace(r, maximum_attempts=0)),
        )

    async def _book(self, name: str, arg) -> None:
        # Taking the slot may wait for another run (RepoConcurrencyLimited): the spec's cap.
        retry = self.retry if name == t.ACQUIRE_SLOT else self._bookkeeping_retry()
        await self._execute(name, arg, retry)

    def _execute(self, name: str, arg, retry: RetryPolicy):
        """A bookkeeping activity: local (run by this worker, recorded as a marker) on runs
        started since the local-bookkeeping patch, a regular activity on older ones."""
        execute = workflow.execute_local_activity if self._local else workflow.execute_activity
        return execute(
            name,
            arg,
            start_to_close_timeout=timedelta(seconds=self.params.bookkeeping_timeout_s),
            retry_policy=retry,
        )

    async def _agent(self, name: str, run_id: str):
        self._stage = t.STAGE_OF[name]
        return await workflow.execute_activity(
            name,
            run_id,
            start_to_close_timeout=timedelta(seconds=self.params.agent_timeout_s),
            heartbeat_timeout=timedelta(seconds=self.params.heartbeat_timeout_s),
            retry_policy=self.retry,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
            if self._cancel_stops_pr and name == t.CREATE_PULL_REQUEST
            else ActivityCancellationType.TRY_CANCEL,
        )

    async def _hold(self, request: t.ApprovalRequest) -> None:
        """Write the approvals row, wait for the decision signal (or the timeout)."""
        self._decision = None
        approval_id = await self._execute(t.REQUEST_APPROVAL, request, self._bookkeeping_retry())
        try:
            await workflow.wait_condition(
                lambda: self._decision is not None and self._decision.approval_id == approval_id,
                timeout=timedelta(seconds=self.params.approval_timeout_s),
            )
        except TimeoutError:
            await self._book(t.EXPIRE_APPROVAL, approval_id)
            raise _Rejected(
                t.Failure(
                    request.run_id,
                    t.STAGE_OF[t.CREATE_PULL_REQUEST],
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
                    t.STAGE_OF[t.CREATE_PULL_REQUEST],
                    "ApprovalRejected",
                    f"rejected by {by}: {self._decision.comment or '(no comment)'}",
                )
            )


def _said(answer, what: str) -> bool:
    """Whether an activity's answer says it did ``what`` (types.VERIFICATION_SKIPPED,
    types.RUN_PASSED); an answer recorded before answers said anything is an artifact id."""
    return isinstance(answer, dict) and answer.get(what) is True


class _Rejected(Exception):
    def __init__(self, failure: t.Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure
