"""Deciding an approval: the row is updated first, then the waiting workflow is signalled."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.db.models.functions import Now

from amtp_site.errors import ApprovalAlreadyDecided, OrchestratorUnavailable
from approvals.models import Approval, Decision
from runs.temporal import connect
from runs.workflow_types import APPROVAL_SIGNAL, ApprovalDecision

ALREADY_DECIDED = (
    "approval {approval_id} was already {decision} by {by}; it cannot be decided twice"
)
SIGNAL_FAILED = (
    "could not signal run {run_id} ({error}); the approval is still pending, decide again when "
    "Temporal is reachable"
)
BAD_DECISION = "decision must be 'approved' or 'rejected', not {decision!r}"


def approval_decide(
    *, approval: Approval, decision: str, decided_by: str, comment: str = ""
) -> Approval:
    if decision not in (Decision.APPROVED, Decision.REJECTED):
        raise ValueError(BAD_DECISION.format(decision=decision))
    updated = Approval.objects.filter(pk=approval.pk, decision=Decision.PENDING).update(
        decision=decision,
        decided_by=decided_by[:150],
        decided_at=Now(),
        decision_comment=comment,
    )
    approval.refresh_from_db()
    if not updated:
        raise ApprovalAlreadyDecided(
            ALREADY_DECIDED.format(
                approval_id=approval.approval_id,
                decision=approval.decision,
                by=approval.decided_by or "someone",
            )
        )

    async def signal():
        client = await connect()
        await client.get_workflow_handle(str(approval.run_id)).signal(
            APPROVAL_SIGNAL,
            ApprovalDecision(str(approval.approval_id), decision, decided_by, comment),
        )

    try:
        async_to_sync(signal)()
    except Exception as exc:
        # Without the signal the workflow would wait until its timeout and nobody could decide
        # again: put the approval back to pending and say so.
        Approval.objects.filter(pk=approval.pk, decision=decision).update(
            decision=Decision.PENDING, decided_by="", decided_at=None, decision_comment=""
        )
        raise OrchestratorUnavailable(
            SIGNAL_FAILED.format(run_id=approval.run_id, error=exc)
        ) from exc
    return approval
