"""The response bodies of ``/api/approvals``, and the run detail of ``/api/runs`` with the
run's approvals (registered as a part of a run: runs.parts)."""

import uuid
from datetime import datetime

from ninja import Field, Schema

from approvals.selectors import run_approvals
from runs import api_schemas


class ApprovalOut(Schema):
    approval_id: uuid.UUID
    run_id: uuid.UUID
    stage: str = Field(description="The stage that waits, e.g. create_pull_request.")
    decision: str
    approver: str = Field(description="Who must decide: 'branch-protection' or 'policy'.")
    comment: str = Field(description="Why the run is held (GitHub's error body).")
    decided_by: str
    decided_at: datetime | None
    decision_comment: str
    created_at: datetime

    @staticmethod
    def resolve_stage(approval) -> str:
        return approval.stage.name


class RunDetailOut(api_schemas.RunDetailOut):
    """The run detail, its approvals included (the name stays: the API documents it so)."""

    approvals: list[ApprovalOut]

    @staticmethod
    def resolve_approvals(run) -> list:
        return [] if api_schemas.just_inserted(run) else list(run_approvals(run))
