"""``webhook_deliveries``: one row per GitHub delivery, so a replay starts nothing twice.

It keeps the ``runs`` app label (table and migrations unchanged)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from amtp_site.constraints import one_of
from amtp_site.fields import optional_char, optional_reference
from amtp_site.moved import KeptInRuns


class DeliveryOutcome(models.TextChoices):
    PONG = "pong"
    RUN_CREATED = "run_created"
    IGNORED = "ignored"
    ORCHESTRATOR_UNAVAILABLE = "orchestrator_unavailable"


# The outcomes of a delivery whose push started a run (an earlier version left runs it could
# not start as ``orchestrator_unavailable``).
STARTED_A_RUN = (DeliveryOutcome.RUN_CREATED, DeliveryOutcome.ORCHESTRATOR_UNAVAILABLE)


class WebhookDelivery(KeptInRuns):
    """One row per ``X-GitHub-Delivery``: a redelivery finds its row and creates nothing; and
    at most one delivery per (repository, pushed SHA) ever starts a run, whatever its id."""

    Outcome = DeliveryOutcome

    delivery_id = models.CharField(max_length=100, unique=True)
    event = models.CharField(max_length=64)
    repo_full_name = models.CharField(max_length=200, blank=True)
    outcome = models.CharField(max_length=32, choices=Outcome.choices)
    pushed_sha = optional_char(max_length=64, help_text="A push's ``after``.")
    note = models.TextField(blank=True)
    run = optional_reference("runs.Run", on_delete=models.SET_NULL, related_name="deliveries")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta(KeptInRuns.Meta):
        db_table = "webhook_deliveries"
        verbose_name_plural = "webhook deliveries"
        constraints = [
            one_of("outcome", DeliveryOutcome, "webhook_deliveries_outcome_valid"),
            # Replays of a captured push, under new delivery ids, any time later: no new run.
            models.UniqueConstraint(
                fields=["repo_full_name", "pushed_sha"],
                condition=Q(outcome__in=STARTED_A_RUN) & ~Q(pushed_sha=""),
                name="webhook_deliveries_one_run_per_push",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.delivery_id}: {self.outcome}"
