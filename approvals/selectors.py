"""Reads of approvals that several surfaces share (the API, the admin, a run's pages)."""

from __future__ import annotations

from django.db.models import QuerySet

from approvals.models import Approval


def run_approvals(run) -> QuerySet[Approval]:
    """The run's approvals (with their stage), oldest first."""
    return Approval.objects.filter(run=run).select_related("stage").order_by("created_at")
