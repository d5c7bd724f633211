"""The response bodies of ``/api/approvals``; the run detail of ``/api/runs`` lists a run's
approvals with the same schema."""

import uuid
from datetime import datetime

from ninja import Field, Schema


class ApprovalOut(Schema):
    approval_id: uuid.UUID
    run_id: uuid.UUID
    stage: str = Field(description="The stage that waits, e.g. create_pull_request.")
    decision: str = Field(description="pending, approved or rejected.")
    approver: str = Field(description="Who must decide: 'branch-protection' or 'policy'.")
    comment: str = Field(description="Why the run is held (GitHub's error body).")
    decided_by: str = Field(
        description="The user or token that decided; amtp when the run ended first, amtp (timeout) "
        "when nobody decided in time; empty while pending."
    )
    decided_at: datetime | None
    decision_comment: str
    created_at: datetime

    @staticmethod
    def resolve_stage(approval) -> str:
        return approval.stage.name
