"""CheckWorkflow: a pull request's check run. ReverifyTests against the pull request's preview
(no heal, no file changed), then ReportCheckRun, which reports the result on GitHub; a check
run whose tests could not run at all still reports why before it fails (on ``verify_tests``).
Code that is not the repository's own is held on ``verify_tests``, before any of it runs; from
the patch ``check-run-reports-hold`` on (:data:`t.CHECK_RUN_HOLD_PATCH`), ReportCheckRunHold
shows that check run on the pull request while it waits (queued, a link to the approval), then
the decision: in progress once approved (ReportCheckRun completes it with the result), or
completed when rejected or expired. A workflow started before the patch (its history has no
marker) shows nothing while it waits, as on 1.0.0; decided on a worker with the patch
``check-run-reports-decision`` (:data:`t.CHECK_RUN_DECISION_PATCH`), it shows the decision.

Start, hold and end are :class:`runs.temporal.run_steps.RunSteps`' (composed). A cancelled
check run is then reported to GitHub as concluded ``cancelled``, so the pull request shows why
it has no result and offers "Re-run".
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import FailureError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    import runs.temporal.run_steps as steps
    import runs.temporal.types as t

FORK_APPROVAL = (
    "Code that is not the repository's own (a pull request from a fork or by an author without "
    "write access, or a deployment of anything but a branch head): its tests run only once "
    "someone approves."
)


@workflow.defn(name=t.CHECK_WORKFLOW)
class CheckWorkflow:
    @workflow.run
    async def run(self, params: t.WorkflowParams) -> str:
        self.steps = steps.RunSteps(params)
        return await self.steps.run(self._stages, after_cancel=self._report_cancel)

    async def _stages(self) -> None:
        run = self.steps
        if run.params.require_approval:  # a fork's code runs only once someone approved
            shown = workflow.patched(t.CHECK_RUN_HOLD_PATCH)
            report = self._report_hold if shown else self._report_decision
            await run.hold(t.STAGE_OF[t.REVERIFY_TESTS], "policy", FORK_APPROVAL, report=report)
        try:
            await run.activity(t.REVERIFY_TESTS, result_type=t.Reverified)
        except FailureError as err:
            if is_cancelled_exception(err):
                raise
            await run.activity(t.REPORT_CHECK_RUN)  # GitHub is told why
            raise
        await run.activity(t.REPORT_CHECK_RUN)

    async def _report_hold(self, state: str, message: str) -> None:
        """The hold on GitHub, best effort: a check run that could not be shown (GitHub away
        past the retry policy, no Checks permission) leaves the hold and the run as they are;
        ReportCheckRun reports the result all the same."""
        hold = t.CheckRunHold(self.steps.run_id, state, message)
        try:
            await self.steps.aside(t.REPORT_CHECK_RUN_HOLD, hold)
        except FailureError as err:
            if is_cancelled_exception(err):
                raise
            workflow.logger.warning(
                "could not show run %s's hold (%s) on GitHub: %s", self.steps.run_id, state, err
            )

    async def _report_decision(self, state: str, message: str) -> None:
        """A hold begun before ``check-run-reports-hold`` (shown nothing while it waited): its
        decision is shown once it comes on a worker that knows how. Replaying a history that
        was decided before, the patch is false and nothing is scheduled, as then."""
        if state != t.HOLD_HELD and workflow.patched(t.CHECK_RUN_DECISION_PATCH):
            await self._report_hold(state, message)

    async def _report_cancel(self) -> None:
        try:  # a report cut short by the cancel finished first: this one then leaves it
            await self.steps.activity(t.REPORT_CHECK_RUN)
        except FailureError as err:  # the run is cancelled; GitHub keeps what it has
            workflow.logger.warning(
                "could not report run %s's cancel on GitHub: %s", self.steps.run_id, err
            )
