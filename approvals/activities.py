"""The workflow's approval bookkeeping, as Temporal activities over ``approvals.services``.

The worker finds them through ``ApprovalsConfig.temporal_activities``.
"""

from approvals.services import approval_expire, approval_request
from runs.temporal import types as t
from runs.temporal.activities import bookkeeping_activity

ACTIVITIES = [
    bookkeeping_activity(t.REQUEST_APPROVAL, approval_request, t.ApprovalRequest),
    bookkeeping_activity(t.EXPIRE_APPROVAL, approval_expire),
]
