"""The writes to ``approvals``: request (the workflow holds a run), decide (a person, through
admin or the API: the row first, then the signal) and expire (nobody decided in time). Closing
a failed or cancelled run's approval is ``ApprovalQuerySet.close`` (``runs.transitions`` calls
it, and this module calls ``runs.transitions``)."""

from __future__ import annotations

from django.db import transaction
from django.db.models.functions import Now

from amtp_site import audit, temporal
from approvals.errors import ApprovalAlreadyDecided, ApprovalDecisionInvalid, SelfApprovalRefused
from approvals.models import Approval, Decision
from notifications.services import notify
from repositories.models import NotifyEvent
from runs import transitions
from runs.errors import OrchestratorUnavailable
from runs.models import Run
from runs.stages import APPROVAL_SIGNAL, ApprovalDecision, ApprovalRequest

ALREADY_DECIDED = (
    "approval {approval_id} was already {decision} by {by}; it cannot be decided twice"
)
SIGNAL_FAILED = (
    "could not signal run {run_id} ({error}); the approval is still pending, decide again when "
    "Temporal is reachable"
)
DECISION_RECORDED = "{decision}; comment: {comment!r}"
EXPIRED = "nobody decided before the approval timeout"
BAD_DECISION = "decision must be 'approved' or 'rejected', not {decision!r}"
MAX_COMMENT_CHARS = 2000
REJECT_NEEDS_COMMENT = "Say why you reject the run: the comment goes into the run's failure."
SELF_APPROVAL = (
    "you requested run {run_id} (or own the token that did), so someone else decides its "
    "approval: {repository} does not allow self-approval (four eyes)"
)
SELF_APPROVAL_AUDIT = "Refused a {decision}: the decider requested the run (four eyes)"
HELD_REASON = "held by {approver}: {comment}"
COMMENT_TOO_LONG = "the comment has {length} characters; at most {limit} are allowed"


def _check(decision: str, comment: str) -> None:
    """The rules of a decision, the same for every surface (admin, API)."""
    if decision not in (Decision.APPROVED, Decision.REJECTED):
        raise ApprovalDecisionInvalid(BAD_DECISION.format(decision=decision), "decision")
    if decision == Decision.REJECTED and not comment.strip():
        raise ApprovalDecisionInvalid(REJECT_NEEDS_COMMENT, "comment")
    if len(comment) > MAX_COMMENT_CHARS:
        message = COMMENT_TOO_LONG.format(length=len(comment), limit=MAX_COMMENT_CHARS)
        raise ApprovalDecisionInvalid(message, "comment")


def _four_eyes(approval: Approval, decision: str, decider: str, actor) -> None:
    """SelfApprovalRefused (audited) when ``decider`` requested the run and its repository
    does not allow self-approval. Runs without a recorded requester (webhooks, the CLI)
    have nobody to compare."""
    requester, repository, allowed = (
        Run.objects.filter(pk=approval.run_id)
        .values_list("requester", "repo_full_name", "repository__allow_self_approval")
        .get()
    )
    if not decider or decider != requester or allowed:
        return
    audit.record(actor, approval, SELF_APPROVAL_AUDIT.format(decision=decision))
    raise SelfApprovalRefused(SELF_APPROVAL.format(run_id=approval.run_id, repository=repository))


def approval_decide(
    *,
    approval: Approval,
    decision: str,
    decided_by: str,
    comment: str = "",
    actor: audit.Actor | None = None,
    decider: str = "",
) -> Approval:
    """Record the decision (once: compare-and-swap from pending), then signal the workflow.

    A reject needs a comment (it becomes the run's failure) and a comment has at most
    ``MAX_COMMENT_CHARS`` characters; the run's requester (``decider``, as ``Run.requester``
    records people and service tokens) may not decide unless the repository allows
    self-approval. A refused decision writes nothing. A signalled decision goes into the
    audit trail under ``actor`` (a person, through admin or the API).
    """
    _check(decision, comment)
    _four_eyes(approval, decision, decider, actor)
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

    async def signal(client):
        await client.get_workflow_handle(str(approval.run_id)).signal(
            APPROVAL_SIGNAL,
            ApprovalDecision(str(approval.approval_id), decision, decided_by, comment),
        )

    try:
        temporal.call(signal)
    except Exception as exc:
        # Without the signal the workflow would wait until its timeout and nobody could decide
        # again: put the approval back to pending and say so.
        Approval.objects.filter(pk=approval.pk, decision=decision).update(
            decision=Decision.PENDING, decided_by="", decided_at=None, decision_comment=""
        )
        raise OrchestratorUnavailable(
            SIGNAL_FAILED.format(run_id=approval.run_id, error=exc)
        ) from exc
    audit.record(
        actor, approval, DECISION_RECORDED.format(decision=decision.capitalize(), comment=comment)
    )
    return approval


@transaction.atomic
def approval_request(request: ApprovalRequest) -> str:
    """One pending approval per run (partial unique index); the stage waits for it."""
    stage = transitions.stage_await_approval(request.run_id, request.stage)
    approval = Approval.objects.filter(run_id=request.run_id, decision=Decision.PENDING).first()
    if approval is None:
        approval = Approval.objects.create(
            run_id=request.run_id, stage=stage, approver=request.approver, comment=request.comment
        )
        reason = HELD_REASON.format(approver=request.approver, comment=request.comment)
        notify(request.run_id, NotifyEvent.RUN_HELD, occurrence=str(approval.pk), reason=reason)
    return str(approval.approval_id)


def approval_expire(approval_id: str) -> None:
    Approval.objects.filter(pk=approval_id, decision=Decision.PENDING).update(
        decision=Decision.REJECTED,
        decided_by="amtp (timeout)",
        decided_at=Now(),
        decision_comment=EXPIRED,
    )
