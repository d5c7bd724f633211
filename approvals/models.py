"""The ``approvals`` table: a held run waiting for a human decision."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from amtp_site.indexes import newest_first, prefix_search


class Decision(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class ApprovalQuerySet(models.QuerySet):
    def close(self, why: str) -> int:
        """The run failed or was cancelled: its pending approval can no longer release
        anything, so it is rejected with ``why`` (``runs.transitions``, in the run's
        transaction)."""
        return self.filter(decision=Decision.PENDING).update(
            decision=Decision.REJECTED, decided_by="amtp", decided_at=Now(), decision_comment=why
        )


class Approval(models.Model):
    Decision = Decision
    objects = ApprovalQuerySet.as_manager()

    approval_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="approvals")
    stage = models.ForeignKey("runs.Stage", on_delete=models.CASCADE, related_name="approvals")
    decision = models.CharField(max_length=16, choices=Decision.choices, default=Decision.PENDING)
    approver = models.CharField(
        max_length=100, help_text="Role that must decide, e.g. 'branch-protection' or 'policy'."
    )
    comment = models.TextField(blank=True, help_text="Why the run is held (GitHub's error body).")
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "approvals"
        ordering = ["-created_at"]
        permissions = [("decide_approval", "Can approve or reject held runs")]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=Decision.values),
                name="approvals_decision_valid",
            ),
            models.UniqueConstraint(
                fields=["run"],
                condition=Q(decision="pending"),
                name="approvals_one_pending_per_run",
            ),
            models.CheckConstraint(
                condition=Q(decision="pending") | Q(decided_at__isnull=False),
                name="approvals_decided_has_time",
            ),
        ]
        indexes = [
            *newest_first(
                "approvals", "approval_id", None, "decision", "approver", include=("decision",)
            ),
            *prefix_search("approvals", "decided_by"),
        ]

    def __str__(self) -> str:
        return f"{self.approver} for {self.run_id}: {self.decision}"

    @property
    def is_pending(self) -> bool:
        return self.decision == Decision.PENDING
