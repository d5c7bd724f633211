"""MaintenanceWorkflow: the tests a repository already holds, re-verified.

A maintenance run: ReverifyTests (healed and quarantined under VerifyTests' rules), then,
when a file changed, OpenMaintenancePullRequest. A check run: ReverifyTests against the pull
request's preview (no heal, no file changed), then ReportCheckRun, which reports the result
on GitHub; a check run whose tests could not run at all still reports why before it fails.

Start, end, cancellation and failures are TestGenerationWorkflow's (inherited), so both kinds
end through EndRun and give their slot back the same way. A cancelled check run is then
reported to GitHub as concluded ``cancelled``, so the pull request shows why it has no result
and offers "Re-run". A separate workflow type, so the generation workflow's recorded
histories keep replaying unchanged.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import FailureError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    import runs.temporal.types as t
    from runs.temporal.workflow import TestGenerationWorkflow


FORK_APPROVAL = (
    "Code that is not the repository's own (a pull request from a fork or by an author without "
    "write access, or a deployment of anything but a branch head): its tests run only once "
    "someone approves."
)


@workflow.defn(name=t.MAINTENANCE_WORKFLOW)
class MaintenanceWorkflow(TestGenerationWorkflow):
    __test__ = False

    @workflow.run
    async def run(self, params: t.MaintenanceParams) -> str:
        return await super().run(params)

    async def _stages(self, run_id: str) -> None:
        if self.params.kind != t.CHECK:
            done = await self._activity(t.REVERIFY_TESTS, run_id, result_type=t.Reverified)
            if done.changed:
                await self._activity(t.OPEN_MAINTENANCE_PR, run_id)
            return
        if self.params.require_approval:  # a fork's code runs only once someone approved
            await self._hold(t.ApprovalRequest(run_id, "policy", FORK_APPROVAL))
        try:
            await self._activity(t.REVERIFY_TESTS, run_id, result_type=t.Reverified)
        except FailureError as err:
            if is_cancelled_exception(err):
                raise
            await self._activity(t.REPORT_CHECK_RUN, run_id)  # GitHub is told why
            raise
        await self._activity(t.REPORT_CHECK_RUN, run_id)

    async def _cancelled(self, run_id: str) -> None:
        await super()._cancelled(run_id)
        if self.params.kind != t.CHECK:
            return
        try:  # a report cut short by the cancel finished first: this one then leaves it
            await self._activity(t.REPORT_CHECK_RUN, run_id)
        except FailureError as err:  # the run is cancelled; GitHub keeps what it has
            workflow.logger.warning("could not report run %s's cancel on GitHub: %s", run_id, err)
