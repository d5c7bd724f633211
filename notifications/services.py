"""Telling people about a run: held for approval, failed, pull request opened.

:func:`notify` is called inside the transaction that writes the event (the approval hold,
the run's failure, the pull request's record): it writes one ``notifications`` row per
channel the repository wants for that event, and once the transaction commits hands them to
a small pool of sender threads. Sending never blocks or fails the run: each delivery has a
timeout (``AMTP_NOTIFY_TIMEOUT_S``) and a bounded number of attempts
(``AMTP_NOTIFY_ATTEMPTS``), and its outcome is recorded on its row (``sent`` or ``failed``
with the error). A row left ``pending`` by a worker that died is sent by
``manage.py send_notifications``: at least once, once per (run, occurrence, channel).

What is sent is built from the run's own fields (repository, ref, status, error, link) and
scrubbed of secrets (``repositories.secrets.scrub``); never a credential, a file or an answer
of a model.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import DatabaseError, connections, transaction
from django.db.models import F
from django.utils import timezone

from notifications.models import Channel, Notification, NotificationStatus
from notifications.webhook import post_json
from repositories.models import NotifyEvent, Repository
from repositories.secrets import scrub
from repositories.targets import origin
from runs.errors import NotificationRefused
from runs.models import Run

logger = logging.getLogger(__name__)
MAX_REASON = 500
SUBJECTS = {
    NotifyEvent.RUN_HELD: "AMTP: {repo} run waits for approval",
    NotifyEvent.RUN_FAILED: "AMTP: {repo} run failed",
    NotifyEvent.PR_OPENED: "AMTP: {repo} pull request opened",
}
_senders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="amtp-notify")


def notify(run_id: str, event: str, *, occurrence: str = "", reason: str = "") -> list[str]:
    """Record ``event`` of the run for every channel its repository wants it on and send it
    once the current transaction commits; the ids of its rows still pending (a retried
    activity finds those an earlier attempt wrote, and writes none)."""
    run = Run.objects.select_related("repository").get(pk=run_id)
    subject, text = message(run, event, reason)
    key = f"{event}:{occurrence}" if occurrence else str(event)
    rows = [
        Notification(
            run_id=run.pk,
            event=event,
            dedupe_key=key,
            channel=channel,
            recipient=recipient,
            subject=subject,
            text=text,
        )
        for channel, recipient in channels(run.repository, event)
    ]
    if not rows:
        return []
    try:
        with transaction.atomic():  # a savepoint: a failure here never rolls the event back
            Notification.objects.bulk_create(rows, ignore_conflicts=True)
    except DatabaseError:
        logger.exception("run %s: %s not recorded for notification", run_id, event)
        return []
    pending = Notification.objects.filter(
        run_id=run.pk, dedupe_key=key, status=NotificationStatus.PENDING
    )
    ids = [str(pk) for pk in pending.values_list("pk", flat=True)]
    transaction.on_commit(lambda: _senders.submit(_send_in_thread, ids))
    return ids


def channels(repository: Repository, event: str) -> list[tuple[str, str]]:
    """(channel, recipient) for each channel that wants ``event``."""
    found = []
    if repository.notify_emails and event in repository.notify_email_events:
        found.append((Channel.EMAIL, ", ".join(repository.notify_emails)))
    if repository.notify_webhook_url and event in repository.notify_webhook_events:
        found.append((Channel.WEBHOOK, _origin(repository.notify_webhook_url)))
    return found


def _origin(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}:{port}"


def _clean(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, secrets scrubbed (the subject of an email
    refuses line breaks; a chat message shows them)."""
    text = " ".join(scrub(str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_link(run: Run) -> str:
    path = f"/admin/runs/run/{run.pk}/change/"
    return settings.AMTP_PUBLIC_URL + path if settings.AMTP_PUBLIC_URL else f"run {run.pk}"


def message(run: Run, event: str, reason: str = "") -> tuple[str, str]:
    """(subject, text) of ``event``: what happened, to which run, why, and where to look."""
    repo = _clean(run.repo_full_name, 100)
    subject = _clean(SUBJECTS[event].format(repo=repo), 200)
    lines = [
        f"{subject.removeprefix('AMTP: ')}.",
        f"Repository: {repo} at {_clean(run.ref, 100)}",
        f"Run: {run_link(run)}",
    ]
    if event == NotifyEvent.RUN_FAILED:
        lines.append(f"Error: {_clean(run.error_type, 100)}")
    if event == NotifyEvent.PR_OPENED and run.pr_url:
        lines.append(f"Pull request: {_clean(run.pr_url, 300)}")
    if reason:
        lines.append(f"Reason: {_clean(reason, MAX_REASON)}")
    return subject, "\n".join(lines)


def _send_in_thread(ids: list[str]) -> None:
    """A sender thread's work: each row delivered, then the thread's connection closed."""
    try:
        for notification_id in ids:
            send(notification_id)
    except Exception:
        logger.exception("notifications %s: not sent", ids)
    finally:
        connections.close_all()


def send(notification_id: str) -> str:
    """Deliver one pending row, trying up to AMTP_NOTIFY_ATTEMPTS times; its new status."""
    row = (
        Notification.objects.filter(pk=notification_id, status=NotificationStatus.PENDING)
        .select_related("run__repository")
        .first()
    )
    if row is None:
        return "gone"
    error = ""
    for attempt in range(max(1, settings.AMTP_NOTIFY_ATTEMPTS)):
        if attempt:
            time.sleep(min(2.0**attempt, 10.0))
        Notification.objects.filter(pk=row.pk).update(attempts=F("attempts") + 1)
        try:
            _deliver(row)
        except NotificationRefused as exc:  # the settings forbid it: trying again won't help
            error = str(exc)
            break
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            continue
        _record(row, NotificationStatus.SENT, "")
        return NotificationStatus.SENT
    if url := row.run.repository.notify_webhook_url:  # its path is a credential
        error = error.replace(url, row.recipient)
    error = _clean(error, 1000)
    logger.warning("notification %s (%s, %s) failed: %s", row.pk, row.event, row.channel, error)
    _record(row, NotificationStatus.FAILED, error)
    return NotificationStatus.FAILED


def _deliver(row: Notification) -> None:
    repository = row.run.repository
    if row.channel == Channel.EMAIL:
        recipients = list(repository.notify_emails)
        if not recipients:
            raise NotificationRefused("the repository has no notification emails any more")
        send_mail(row.subject, row.text, settings.DEFAULT_FROM_EMAIL, recipients)
    else:
        if not repository.notify_webhook_url:
            raise NotificationRefused("the repository has no notification webhook any more")
        # Slack: {"text": ...} (api.slack.com/messaging/webhooks); a Teams incoming webhook
        # takes the same (learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/
        # how-to/connectors-using#post-a-message-to-the-webhook-using-curl). Both ignore the
        # "amtp" object, which is there for receivers of one's own.
        body = {
            "text": row.text,
            "amtp": {
                "event": row.event,
                "run_id": str(row.run_id),
                "repository": _clean(row.run.repo_full_name, 200),
                "status": row.run.status,
                "link": run_link(row.run),
            },
        }
        post_json(repository.notify_webhook_url, body)


def _record(row: Notification, status: str, error: str) -> None:
    Notification.objects.filter(pk=row.pk).update(
        status=status,
        last_error=error,
        sent_at=timezone.now() if status == NotificationStatus.SENT else None,
    )


def send_pending(older_than_s: float = 60.0) -> dict[str, int]:
    """Deliver the rows still pending after ``older_than_s`` (their sender died); counts by
    outcome."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    pending = Notification.objects.filter(status=NotificationStatus.PENDING, created_at__lt=cutoff)
    counts: dict[str, int] = {}
    for notification_id in pending.order_by("created_at").values_list("pk", flat=True)[:1000]:
        outcome = send(str(notification_id))
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
