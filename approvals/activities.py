"""The workflow's approval bookkeeping, as Temporal activities over ``approvals.services``
(local activities of the workflow, run in a worker thread).
Listed in ``runs.temporal.worker.ACTIVITIES``.
"""

from temporalio import activity

from approvals.services import approval_expire, approval_request
from runs.temporal import types as t
from runs.temporal.activities import bookkeeping


@activity.defn(name=t.REQUEST_APPROVAL)
async def request_approval(request: t.ApprovalRequest) -> str:
    """The run's pending approval (written once), its stage awaiting it: the approval id."""
    return await bookkeeping(approval_request, request)


@activity.defn(name=t.EXPIRE_APPROVAL)
async def expire_approval(approval_id: str) -> None:
    """Nobody decided in time: the approval rejected by the timeout."""
    await bookkeeping(approval_expire, approval_id)
