"""``/api/approvals``: the held runs, and deciding them (which signals the waiting workflow)."""

import uuid
from typing import Literal

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Query, Schema

from access.auth import DECIDE_APPROVALS, READ_APPROVALS, scoped
from access.routes import ApiRouter
from amtp_site.problems import documented
from approvals.api_schemas import ApprovalOut
from approvals.models import Approval, Decision
from approvals.services import MAX_COMMENT_CHARS, approval_decide
from runs.api_schemas import ClosedSchema

router = ApiRouter(tags=["approvals"])


class ApprovalFilters(Schema):
    decision: Decision | None = None
    run_id: uuid.UUID | None = None


class DecisionIn(ClosedSchema):
    decision: Literal["approved", "rejected"]
    comment: str = Field(
        "",
        pattern=r"^[^\x00]*$",
        description=f"Why; required to reject. At most {MAX_COMMENT_CHARS} characters.",
        # Documented here, enforced by approval_decide (the admin form meets the same rule).
        json_schema_extra={"maxLength": MAX_COMMENT_CHARS},
    )


@router.page(ApprovalOut, READ_APPROVALS, url_name="approval_list", summary="List approvals")
def list_approvals(request: HttpRequest, filters: Query[ApprovalFilters]):
    """Newest first; ``?decision=pending`` lists the runs waiting for a human."""
    approvals = request.auth.restrict(
        Approval.objects.select_related("stage"), READ_APPROVALS, via="run__repository"
    )
    if filters.decision:
        approvals = approvals.filter(decision=filters.decision)
    if filters.run_id:
        approvals = approvals.filter(run_id=filters.run_id)
    return approvals


@router.post(
    "/{approval_id}/decision",
    response={200: ApprovalOut, **documented(400, 401, 403, 404, 409, 413, 415, 422, 503)},
    auth=scoped(DECIDE_APPROVALS),
    url_name="approval_decide",
    summary="Decide an approval",
)
def decide_approval(request: HttpRequest, approval_id: uuid.UUID, payload: DecisionIn):
    """Approve (the workflow opens the PR) or reject (the run fails). Deciding twice is 409;
    deciding a run one requested is 403 unless its repository allows self-approval."""
    principal = request.auth
    visible = principal.restrict(
        Approval.objects.select_related("stage", "run"),
        READ_APPROVALS,
        DECIDE_APPROVALS,
        via="run__repository",
    )
    approval = get_object_or_404(visible, pk=approval_id)
    principal.require_on(DECIDE_APPROVALS, approval.run, approval.run.repo_full_name)
    return approval_decide(
        approval=approval,
        decision=payload.decision,
        decided_by=principal.name,
        comment=payload.comment,
        actor=principal.actor,
        decider=principal.requester,
    )
