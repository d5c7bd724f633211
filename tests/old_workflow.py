"""A run's workflow as an earlier AMTP shaped it, for tests/test_upgrade_drain.py: registered
under the same workflow type as TestGenerationWorkflow, it marks the run running (the same
first step) and then schedules GenerateTestCases, where today's workflow schedules CrawlRepo.
A worker of today replaying its history meets a command it would not have issued.
:class:`OldHoldingWorkflow`, the same type too, holds the run for approval (a policy hold)
right after marking it running, and waits for the decision.

In a module of its own, free of Django at import: Temporal's workflow sandbox re-imports it.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    import runs.temporal.types as t


@workflow.defn(name=t.WORKFLOW_NAME)
class OldShapeWorkflow:
    @workflow.run
    async def run(self, params: t.WorkflowParams) -> str:
        await workflow.execute_local_activity(
            t.START_RUN,
            params.run_id,
            start_to_close_timeout=timedelta(seconds=params.bookkeeping_timeout_s),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        await workflow.execute_activity(
            t.GENERATE_TEST_CASES,
            params.run_id,
            start_to_close_timeout=timedelta(seconds=params.agent_timeout_s),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.2)),
        )
        return t.PASSED


@workflow.defn(name=t.WORKFLOW_NAME)
class OldHoldingWorkflow:
    def __init__(self) -> None:
        self.decision: t.ApprovalDecision | None = None

    @workflow.signal(name=t.APPROVAL_SIGNAL)
    def decided(self, decision: t.ApprovalDecision) -> None:
        self.decision = decision

    @workflow.run
    async def run(self, params: t.WorkflowParams) -> str:
        local = {
            "start_to_close_timeout": timedelta(seconds=params.bookkeeping_timeout_s),
            "retry_policy": RetryPolicy(maximum_attempts=1),
        }
        await workflow.execute_local_activity(t.START_RUN, params.run_id, **local)
        request = t.ApprovalRequest(
            params.run_id, "policy", "an earlier AMTP asked first", "create_pull_request"
        )
        await workflow.execute_local_activity(t.REQUEST_APPROVAL, request, **local)
        await workflow.wait_condition(lambda: self.decision is not None)
        return t.PASSED
