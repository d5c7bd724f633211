"""ScheduledMaintenance: what a repository's maintenance schedule starts
(``repositories/schedules.py``).

One activity, StartScheduledMaintenance, creates the maintenance run through the same service
as every other surface, keyed by this workflow's id (the schedule's id and the firing's time,
given by Temporal), so a retried activity or a replayed history finds the same run; the run's
own MaintenanceWorkflow is then started by the dispatcher as usual. Deterministic: the key is
the workflow id, not a clock.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from repositories.schedules import (
        SCHEDULED_MAINTENANCE_WORKFLOW,
        START_SCHEDULED_MAINTENANCE,
    )
    from runs.temporal.types import ScheduledStart

# Only the database can fail the activity (the service says why it started nothing instead
# of raising), so it is retried until the action's execution timeout.
RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=30))


@workflow.defn(name=SCHEDULED_MAINTENANCE_WORKFLOW)
class ScheduledMaintenanceWorkflow:
    @workflow.run
    async def run(self, repository_id: int) -> str:
        return await workflow.execute_activity(
            START_SCHEDULED_MAINTENANCE,
            ScheduledStart(repository_id, workflow.info().workflow_id),
            result_type=str,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RETRY,
        )
