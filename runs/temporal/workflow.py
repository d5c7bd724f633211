"""TestGenerationWorkflow: the three agents, VerifyTests and the pull request, in sequence.

Start, hold and end are :class:`runs.temporal.run_steps.RunSteps`' (composed, as in the
maintenance and check workflows); what is here is the generation run's own sequence.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

# ``import a.b.c``: see run_steps.py.
with workflow.unsafe.imports_passed_through():
    import runs.temporal.run_steps as steps
    import runs.temporal.types as t

POLICY_APPROVAL = "The repository requires a human approval before AMTP opens a pull request."


@workflow.defn(name=t.WORKFLOW_NAME)
class TestGenerationWorkflow:
    __test__ = False  # a product class, not a pytest test class

    @workflow.run
    async def run(self, params: t.WorkflowParams) -> str:
        self.steps = steps.RunSteps(params)
        return await self.steps.run(self._stages)

    async def _stages(self) -> None:
        run = self.steps
        repo = await run.activity(t.CRAWL_REPO, result_type=t.RepoMap)
        if not repo.boot_skipped:
            await run.activity(t.BOOT_APP)
        if not repo.exploration_skipped:
            await run.activity(t.EXPLORE_APP)
        await run.activity(t.GENERATE_TEST_CASES)
        code = await run.activity(t.GENERATE_TEST_CODE, result_type=t.TestCode)
        if not code.verification_skipped:
            await run.activity(t.VERIFY_TESTS)
        if run.params.require_approval:
            await run.hold(steps.PR_STAGE, "policy", POLICY_APPROVAL)
        await self._pull_request()

    async def _pull_request(self) -> None:
        """Open the PR; while branch protection refuses it, hold for an approval and retry."""
        while True:
            try:
                return await self.steps.activity(t.CREATE_PULL_REQUEST)
            except ActivityError as err:
                cause = steps.cause(err)
                if cause is None or cause.type != "BranchProtectionViolation":
                    raise
                body = (cause.details or [{}])[0].get("body", cause.message)
                await self.steps.hold(steps.PR_STAGE, "branch-protection", body)
