"""Notifications: a held, failed or PR-opened run told by email and webhook, through a real
HTTP receiver on loopback and Django's locmem mail backend; never a secret in them, never a
delivery to a private or metadata address, and a failing receiver never fails the run."""

from __future__ import annotations

import json
import time

import pytest
from django.core import mail

from approvals.services import approval_request
from notifications import services as notifications
from notifications.models import Notification
from notifications.webhook import post_json
from repositories.errors import RepositoryInvalid
from repositories.services import repository_validate
from runs import transitions
from runs.errors import NotificationRefused
from runs.models import Run
from runs.temporal import types as t
from tests.factories import RepositoryFactory, RunFactory
from tests.notify_receiver import local_receiver

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape


@pytest.fixture
def receiver(settings):
    with local_receiver(settings) as server:
        yield server


def open_run(receiver, **repository) -> Run:
    defaults = {"notify_emails": ["ops@example.com", "qa@example.com"]}
    repo = RepositoryFactory(notify_webhook_url=receiver.url, **{**defaults, **repository})
    run = RunFactory(repository=repo, status="running")
    transitions.create_stages(run)
    return run


def wait_for(check, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_a_held_run_notifies_the_webhook_once_after_its_hold_commits(receiver):
    run = open_run(receiver, notify_emails=[])
    comment = f"refused; token {TOKEN}"
    request = t.ApprovalRequest(
        str(run.run_id), "branch-protection", comment, "create_pull_request"
    )
    approval_id = approval_request(request)
    assert approval_request(request) == approval_id  # the activity retried: no second one
    wait_for(lambda: Notification.objects.filter(status="sent").exists())
    time.sleep(0.3)  # a second delivery, were there one, would have arrived by now
    assert len(receiver.posts) == 1
    post = receiver.posts[0]
    assert post["path"] == "/services/T000/B000/SECRETPATH"
    assert post["headers"]["Content-Type"] == "application/json"
    body = post["body"]
    assert body["text"].startswith(f"{run.repo_full_name} run waits for approval.")
    assert f"https://amtp.example.com/admin/runs/run/{run.run_id}/change/" in body["text"]
    assert "held by branch-protection: refused; token [REDACTED:" in body["text"]
    assert TOKEN not in json.dumps(post)
    assert body["amtp"] == {
        "event": "run_held",
        "run_id": str(run.run_id),
        "repository": run.repo_full_name,
        "status": "running",
        "link": f"https://amtp.example.com/admin/runs/run/{run.run_id}/change/",
    }
    row = Notification.objects.get()
    assert (row.channel, row.attempts, row.dedupe_key) == ("webhook", 1, f"run_held:{approval_id}")
    assert "SECRETPATH" not in row.recipient and row.recipient.startswith("http://127.0.0.1:")


@pytest.mark.django_db
def test_a_failed_run_is_emailed_and_posted_without_its_secrets(
    receiver, django_capture_on_commit_callbacks
):
    run = open_run(receiver)
    failure = t.Failure(str(run.run_id), "crawl_repo", "GitHubForbidden", f"denied for {TOKEN}")
    with django_capture_on_commit_callbacks() as callbacks:
        assert transitions.run_end(run_id=failure.run_id, status="failed", failure=failure)
        # EndRun retried
        assert not transitions.run_end(run_id=failure.run_id, status="failed", failure=failure)
    assert len(callbacks) == 1
    rows = Notification.objects.order_by("channel")
    assert [row.channel for row in rows] == ["email", "webhook"]
    assert [notifications.send(str(row.pk)) for row in rows] == ["sent", "sent"]
    assert notifications.send(str(rows[0].pk)) == "gone"  # sent once, not again
    [email] = mail.outbox
    assert email.to == ["ops@example.com", "qa@example.com"]
    assert email.subject == f"AMTP: {run.repo_full_name} run failed"
    assert "Error: GitHubForbidden" in email.body and TOKEN not in email.body
    assert "[REDACTED:" in email.body
    [post] = receiver.posts
    assert post["body"]["text"] == email.body and post["body"]["amtp"]["status"] == "failed"


@pytest.mark.django_db
def test_only_the_chosen_events_notify_and_a_pr_opened_can_be_chosen(receiver):
    run = open_run(receiver, notify_email_events=["pr_opened"], notify_webhook_events=[])
    Run.objects.filter(pk=run.pk).update(pr_url="https://github.com/acme/web/pull/7")
    assert notifications.notify(str(run.run_id), "run_failed") == []
    [row_id] = notifications.notify(str(run.run_id), "pr_opened")
    assert notifications.notify(str(run.run_id), "pr_opened") == [row_id]  # found, not new
    assert Notification.objects.count() == 1
    assert notifications.send(row_id) == "sent"
    assert "Pull request: https://github.com/acme/web/pull/7" in mail.outbox[0].body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "attempts", "said"),
    [(500, 2, "answered 500"), (404, 1, "answered 404"), (302, 1, "answered 302")],
)
def test_a_refusing_receiver_is_tried_a_bounded_number_of_times_and_recorded(
    receiver, status, attempts, said
):
    receiver.status = status
    run = open_run(receiver, notify_emails=[])
    [row_id] = notifications.notify(str(run.run_id), "run_failed")
    assert notifications.send(row_id) == "failed"
    row = Notification.objects.get()
    assert (row.status, row.attempts, len(receiver.posts)) == ("failed", attempts, attempts)
    assert said in row.last_error and "SECRETPATH" not in row.last_error


@pytest.mark.django_db
def test_a_receiver_that_hangs_costs_at_most_the_timeout_per_attempt(receiver, settings):
    settings.AMTP_NOTIFY_ATTEMPTS = 1
    receiver.delay = 3.0
    run = open_run(receiver, notify_emails=[])
    [row_id] = notifications.notify(str(run.run_id), "run_failed")
    started = time.monotonic()
    assert notifications.send(row_id) == "failed"
    assert time.monotonic() - started < 2.5
    assert "timed out" in Notification.objects.get().last_error.lower()


@pytest.mark.django_db
def test_rows_a_dead_worker_left_pending_are_sent_by_send_pending(receiver):
    run = open_run(receiver)
    ids = notifications.notify(str(run.run_id), "run_failed")  # never committed: no sender
    assert Notification.objects.filter(status="pending").count() == 2
    assert notifications.send_pending(older_than_s=60) == {}  # too recent: its worker may send
    assert notifications.send_pending(older_than_s=0) == {"sent": 2}
    assert len(receiver.posts) == 1 and len(mail.outbox) == 1
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}
    assert len(ids) == 2


HOSTILE_WEBHOOKS = [
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("https://169.254.169.254/latest/meta-data/", "link-local"),
    ("https://[::ffff:169.254.169.254]/", "link-local"),
    ("https://10.0.0.5/hook", "10.0.0.5 is a private address"),
    ("https://127.1/hook", "loopback"),
    ("file:///etc/passwd", "give an absolute https:// URL"),
    ("gopher://hooks.example.com/", "give an absolute https:// URL"),
    ("http://hooks.example.com/x", "use https://"),
    ("https://user:pw@hooks.example.com/x", "leave user names and passwords out"),
    ("https://hooks.example.com/x\r\nX-Evil: 1", "give an absolute https:// URL"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "rule"), HOSTILE_WEBHOOKS)
def test_a_hostile_webhook_url_is_refused_naming_the_field(settings, url, rule):
    settings.AMTP_NOTIFY_ALLOW_HOSTS = ["169.254.169.254", "[::ffff:169.254.169.254]"]
    with pytest.raises(RepositoryInvalid) as refused:
        repository_validate(full_name="acme/web", notify_webhook_url=url)
    assert list(refused.value.errors) == ["notify_webhook_url"]
    assert rule in refused.value.errors["notify_webhook_url"][0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("notify_emails", ["ops@example.com\nBcc: all@example.com"], "is not an email address"),
        ("notify_emails", ["ops@example.com, qa@example.com"], "is not an email address"),
        ("notify_emails", "ops@example.com", "give a list of email addresses"),
        ("notify_emails", [f"u{i}@example.com" for i in range(21)], "at most 20 addresses"),
        ("notify_email_events", ["everything"], "is not an event"),
        ("notify_webhook_events", ["run_failed", "run_failed"], "listed twice"),
        ("retention_days", 0, "between 1 and 36500 days"),
    ],
)
def test_hostile_notification_and_retention_settings_are_refused(field, value, rule):
    with pytest.raises(RepositoryInvalid) as refused:
        repository_validate(full_name="acme/web", **{field: value})
    assert list(refused.value.errors) == [field]
    assert rule in refused.value.errors[field][0]


@pytest.mark.django_db
def test_a_webhook_whose_name_now_resolves_to_a_private_address_is_not_posted_to(receiver):
    """Saved while public, resolving to loopback when sent (DNS rebinding): refused at once."""
    url = receiver.url.replace("127.0.0.1", "localhost")
    with pytest.raises(NotificationRefused, match="localhost is a loopback address"):
        post_json(url.replace("http://", "https://"), {"text": "hi"})
    run = open_run(receiver, notify_emails=[])
    run.repository.notify_webhook_url = url.replace("http://", "https://")
    run.repository.save()
    [row_id] = notifications.notify(str(run.run_id), "run_failed")
    assert notifications.send(row_id) == "failed"
    row = Notification.objects.get()
    assert row.attempts == 1 and "loopback" in row.last_error and not receiver.posts


@pytest.mark.django_db
def test_an_unreachable_mail_server_fails_the_notification_not_the_run(receiver, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 9  # discard: nothing listens
    settings.AMTP_NOTIFY_ATTEMPTS = 1
    run = open_run(receiver, notify_webhook_events=[])
    failure = t.Failure(str(run.run_id), "crawl_repo", "GitHubForbidden", "no access")
    assert transitions.run_end(run_id=failure.run_id, status="failed", failure=failure)
    [row] = Notification.objects.all()
    assert notifications.send(str(row.pk)) == "failed"
    row.refresh_from_db()
    assert row.channel == "email" and "ConnectionRefusedError" in row.last_error
    assert Run.objects.get(pk=run.pk).status == "failed"
