"""What approvals shows on a run's pages, registered as a part of the run (runs.parts): the
run detail's approvals, the context document's decisions and holds, the admin page's section."""

from __future__ import annotations

from approvals.api_schemas import RunDetailOut
from approvals.selectors import run_approvals
from runs.context import iso
from runs.parts import RunPart

APPROVE_ACTION = "approve or reject the held pull request (approval {id}, {approver}): {why}"
SECTION_TEMPLATE = "admin/approvals/approval/_run_section.html"


def context_lines(run) -> tuple[list[str], list[str]]:
    """The decisions taken on the run's approvals, and the holds waiting for one."""
    approvals = list(run_approvals(run))
    taken = [
        f"{a.approver} approval {a.decision} by {a.decided_by or 'someone'} at "
        f"{iso(a.decided_at)}" + (f": {a.decision_comment}" if a.decision_comment else "")
        for a in approvals
        if not a.is_pending
    ]
    held = [
        APPROVE_ACTION.format(id=a.approval_id, approver=a.approver, why=a.comment[:200])
        for a in approvals
        if a.is_pending
    ]
    return taken, held


def admin_section(request, run) -> dict | None:
    """The run page's approvals, each with a decision form where the user may decide."""
    from approvals.admin import approval_rows  # the admin module is loaded with the admin

    rows = approval_rows(request, run)
    return {"template": SECTION_TEMPLATE, "rows": rows} if rows else None


PART = RunPart(
    name="approvals", detail=RunDetailOut, context=context_lines, admin_section=admin_section
)
