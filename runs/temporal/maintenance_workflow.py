"""MaintenanceWorkflow: the tests a repository already holds, re-verified (healed and
quarantined under VerifyTests' rules), then, when a file changed, OpenMaintenancePullRequest.

Start, end and cancellation are :class:`runs.temporal.run_steps.RunSteps`' (composed): a
cancel during OpenMaintenancePullRequest waits for it and takes back what it wrote.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import runs.temporal.run_steps as steps
    import runs.temporal.types as t


@workflow.defn(name=t.MAINTENANCE_WORKFLOW)
class MaintenanceWorkflow:
    @workflow.run
    async def run(self, params: t.WorkflowParams) -> str:
        self.steps = steps.RunSteps(params)
        return await self.steps.run(self._stages)

    async def _stages(self) -> None:
        done = await self.steps.activity(t.REVERIFY_TESTS, result_type=t.Reverified)
        if done.changed:
            await self.steps.activity(t.OPEN_MAINTENANCE_PR)
