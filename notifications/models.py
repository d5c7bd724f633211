"""The ``notifications`` table: what a run's events told whom, and whether it arrived.
It keeps the ``runs`` app label (table and migrations unchanged).

A row is written in the transaction that writes its event (``notifications.services``), so an
event that happened has its rows, and each row is delivered at least once. One row per (run,
occurrence, channel): a retried activity or a second sender finds it and sends nothing new.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from amtp_site.constraints import one_of_each
from amtp_site.moved import KeptInRuns
from repositories.models import NotifyEvent


class NotificationStatus(models.TextChoices):
    PENDING = "pending", "pending (not delivered yet)"
    SENT = "sent", "sent"
    FAILED = "failed", "failed (its last error says why)"


class Channel(models.TextChoices):
    EMAIL = "email"
    WEBHOOK = "webhook"


class Notification(KeptInRuns):
    Channel = Channel
    Status = NotificationStatus

    notification_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(
        "runs.Run",
        on_delete=models.CASCADE,
        related_name="notifications",
        db_index=False,  # notifications_once leads with it
    )
    event = models.CharField(max_length=32, choices=NotifyEvent.choices)
    dedupe_key = models.CharField(
        max_length=100, help_text="The occurrence: the event, or the event and its approval."
    )
    channel = models.CharField(max_length=16, choices=Channel.choices)
    recipient = models.CharField(
        max_length=2000,
        help_text="The addresses, or the webhook's origin (never its path: a Slack or Teams "
        "webhook's path is its credential).",
    )
    subject = models.CharField(max_length=200)
    text = models.TextField(help_text="What was sent, scrubbed of secrets.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta(KeptInRuns.Meta):
        db_table = "notifications"
        ordering = ["-created_at"]
        constraints = [
            *one_of_each(
                "notifications", event=NotifyEvent, channel=Channel, status=NotificationStatus
            ),
            models.UniqueConstraint(
                fields=["run", "dedupe_key", "channel"], name="notifications_once"
            ),
        ]
        indexes = [
            # send_notifications: the few rows still pending (a worker died before sending).
            models.Index(
                fields=["created_at"],
                condition=Q(status="pending"),
                name="notifications_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} by {self.channel}: {self.status}"
