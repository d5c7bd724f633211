"""GitHub webhooks: signatures over the raw body, one row per delivery, pushes start runs (the
pushed SHA checked against the branch's head, one run per push ever)."""

import json
import uuid

import pytest
from temporalio.client import WorkflowExecutionStatus

from runs import pipeline
from runs.models import Run, RunStart
from runs.services import run_again
from runs.temporal.dispatcher import run_starts_dispatch
from tests import api_support, webhook_support
from tests.api_support import assert_problem, describe
from tests.factories import RepositoryFactory
from tests.gitrepo import commit_files, git, make_git_repo
from tests.samples import DEMO_WEB
from tests.temporal_worker import wait_terminal
from tests.webhook_support import SECRET, SHA, deliver, push
from triggers import api as webhooks
from triggers import services as webhook_deliveries
from triggers.models import WebhookDelivery

pytestmark = pytest.mark.django_db

api_env = api_support.api_env  # shared fixture

hub = webhook_support.hub  # shared fixture: acme/shop on the fake GitHub, main at SHA


@pytest.fixture(autouse=True)
def secret(settings, hub):
    settings.GITHUB_WEBHOOK_SECRET = SECRET


@pytest.fixture
def repo():
    return RepositoryFactory(full_name="acme/shop", webhook_enabled=True, default_branch="main")


def nothing_recorded():
    return WebhookDelivery.objects.count() == 0 and Run.objects.count() == 0


# --- signatures --------------------------------------------------------------------------------


def test_githubs_published_test_vector():
    signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert webhooks.signature_for("It's a Secret to Everybody", b"Hello, World!") == signature
    assert webhooks.signature_valid("It's a Secret to Everybody", b"Hello, World!", signature)
    assert not webhooks.signature_valid("It's a Secret to Everybody", b"Hello, World?", signature)


def test_the_test_vector_passes_the_endpoints_signature_check(client, settings):
    settings.GITHUB_WEBHOOK_SECRET = "It's a Secret to Everybody"
    signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    response = deliver(client, b"Hello, World!", event="ping", signature=signature)
    # Past the signature; refused only because "Hello, World!" is not a JSON payload.
    assert assert_problem(response, 400, "bad-webhook")["detail"] == webhooks.BAD_PAYLOAD
    assert nothing_recorded()


@pytest.mark.parametrize(
    "signature,detail",
    [
        (False, webhooks.SIGNATURE_MISSING),
        ("sha256=" + "0" * 64, webhooks.SIGNATURE_MISMATCH),
        ("sha1=" + "0" * 40, webhooks.SIGNATURE_MISMATCH),
        ("sha256=é", webhooks.SIGNATURE_MISMATCH),
    ],
)
def test_missing_or_wrong_signatures_are_refused_and_create_nothing(
    client, repo, signature, detail
):
    response = deliver(client, push(), signature=signature)
    assert assert_problem(response, 403, "bad-signature")["detail"] == detail
    assert nothing_recorded()


def test_a_tampered_body_is_refused(client, repo):
    body = json.dumps(push()).encode()
    signature = webhooks.signature_for(SECRET, body)
    tampered = body.replace(b"main", b"prod")
    assert_problem(deliver(client, tampered, signature=signature), 403, "bad-signature")
    assert_problem(deliver(client, push(), secret="another secret"), 403)
    assert nothing_recorded()


def test_without_a_configured_secret_nothing_is_accepted(client, repo, settings):
    settings.GITHUB_WEBHOOK_SECRET = ""
    response = deliver(client, push())
    assert assert_problem(response, 503, "webhook-secret-missing")["detail"] == webhooks.NO_SECRET
    assert nothing_recorded()


def test_oversized_payloads_are_413_before_anything_else(client, repo, settings):
    settings.AMTP_WEBHOOK_MAX_BYTES = 2000
    assert_problem(deliver(client, push(padding="x" * 3000)), 413, "payload-too-large")
    settings.GITHUB_WEBHOOK_SECRET = ""  # size is checked first, even before the secret
    assert_problem(deliver(client, push(padding="x" * 3000)), 413)
    assert nothing_recorded()


@pytest.mark.parametrize("header", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_missing_delivery_headers_are_400(client, repo, header):
    body = json.dumps(push()).encode()
    headers = {
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": webhooks.signature_for(SECRET, body),
    }
    del headers[header]
    response = client.post(
        "/api/webhooks/github", body, content_type="application/json", headers=headers
    )
    assert assert_problem(response, 400)["errors"][0]["field"] == header
    assert nothing_recorded()


def test_a_malformed_push_is_400_naming_the_fields(client, repo):
    response = deliver(client, {**push(), "after": "not-a-sha", "repository": "acme/shop"})
    fields = {e["field"] for e in assert_problem(response, 400, "bad-webhook")["errors"]}
    assert fields == {"after", "repository"}
    assert_problem(deliver(client, [1, 2]), 400)
    assert nothing_recorded()


# --- deliveries --------------------------------------------------------------------------------


def test_ping_is_answered_and_recorded(client):
    response = deliver(
        client, {"zen": "Design for failure.", "hook_id": 1}, event="ping", delivery="d-ping"
    )
    assert response.status_code == 200 and response.json()["status"] == "pong"
    assert WebhookDelivery.objects.get().outcome == "pong"


def test_a_push_to_the_default_branch_starts_a_run(client, repo, api_env):
    response = deliver(client, push(), delivery="d-1")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert response.json()["run_id"] == str(run.run_id)
    assert response["Location"] == f"/api/runs/{run.run_id}"
    assert (run.trigger, run.ref, run.base_branch, run.request_key, run.requested_by) == (
        "webhook",
        SHA,
        "main",
        "github-delivery:d-1",
        "github:octocat",
    )
    assert RunStart.objects.get().run == run and run_starts_dispatch() == 1
    assert describe(run.run_id).status == WorkflowExecutionStatus.RUNNING
    delivery = WebhookDelivery.objects.get()
    assert (delivery.delivery_id, delivery.outcome, delivery.run) == ("d-1", "run_created", run)


def test_a_redelivery_creates_nothing_new(client, repo, api_env):
    first = deliver(client, push(), delivery="d-2").json()
    again = deliver(client, push(), delivery="d-2")
    assert again.status_code == 200
    assert again.json()["status"] == "duplicate" and again.json()["run_id"] == first["run_id"]
    assert Run.objects.count() == 1 and WebhookDelivery.objects.count() == 1


def test_watched_branches_start_runs_and_others_are_ignored(client, api_env, hub):
    RepositoryFactory(full_name="acme/shop", webhook_enabled=True, webhook_branches=["release"])
    hub.branch("acme/shop", "release", SHA)
    ignored = deliver(client, push("main"))
    assert ignored.status_code == 200 and ignored.json()["status"] == "ignored"
    assert "does not start runs" in ignored.json()["note"]
    assert deliver(client, push("release")).status_code == 201
    assert Run.objects.get().base_branch == "release"


@pytest.mark.parametrize(
    "payload,event,note",
    [
        (push(deleted=True, after="0" * 40), "push", "deleted"),
        ({**push(), "ref": "refs/tags/v1.0"}, "push", "is not a branch"),
        (push(repo="acme/unknown"), "push", "not registered"),
        ({"action": "opened"}, "issues", "not handled"),
    ],
)
def test_events_that_start_nothing_are_acknowledged(client, repo, payload, event, note):
    response = deliver(client, payload, event=event)
    assert response.status_code == 200 and response.json()["status"] == "ignored"
    assert note in response.json()["note"]
    assert Run.objects.count() == 0 and WebhookDelivery.objects.get().outcome == "ignored"


def test_a_push_asking_for_maintenance_without_a_preview_url_starts_nothing(client, repo):
    repo.maintain_on_push, repo.preview_url = True, ""
    repo.save()
    response = deliver(client, push("main"))
    assert response.status_code == 200 and response.json()["status"] == "ignored"
    assert response.json()["note"].startswith("acme/shop has no preview URL: a maintenance run")
    assert Run.objects.count() == 0 and WebhookDelivery.objects.get().outcome == "ignored"


def test_repositories_with_webhooks_disabled_are_ignored(client):
    RepositoryFactory(full_name="acme/shop", webhook_enabled=False)
    response = deliver(client, push())
    assert response.json()["note"] == webhook_deliveries.WEBHOOKS_DISABLED.format(repo="acme/shop")
    assert Run.objects.count() == 0


def test_form_encoded_deliveries_are_understood(client, repo, api_env):
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(push())}).encode()
    response = deliver(client, body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 201 and Run.objects.get().ref == SHA


def test_orchestrator_down_the_push_is_accepted_and_queued_to_start(client, repo, api_env):
    """Runs are started from the run_starts outbox: a delivery never waits for Temporal, so
    GitHub gets its 201 and the run starts when a worker's dispatcher reaches Temporal."""
    address, api_env.TEMPORAL_ADDRESS = api_env.TEMPORAL_ADDRESS, "127.0.0.1:1"
    response = deliver(client, push(), delivery="d-3")
    api_env.TEMPORAL_ADDRESS = address
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert response.json()["run_id"] == str(run.run_id) and run.status == "pending"
    assert RunStart.objects.filter(run=run).exists()
    assert WebhookDelivery.objects.get().outcome == "run_created"


def test_a_redelivery_of_a_push_an_earlier_version_could_not_start_queues_its_run(
    client, repo, api_env
):
    """Before the outbox, an unreachable Temporal left the run pending and the delivery
    ``orchestrator_unavailable``; GitHub's redelivery of it queues that run to start."""
    deliver(client, push(), delivery="d-4")
    run = Run.objects.get()
    RunStart.objects.all().delete()  # as an earlier version left it: saved, never queued
    WebhookDelivery.objects.update(outcome="orchestrator_unavailable")
    again = deliver(client, push(), delivery="d-4")
    assert again.json()["status"] == "duplicate" and again.json()["run_id"] == str(run.run_id)
    assert RunStart.objects.filter(run=run).exists() and Run.objects.count() == 1
    assert WebhookDelivery.objects.get().outcome == "run_created"


@pytest.mark.django_db(transaction=True)
def test_a_push_runs_the_whole_pipeline(tmp_path, worker, client):
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    RepositoryFactory(
        full_name="acme/web",
        host="local",
        local_path=path,
        webhook_enabled=True,
        default_depth_level="smoke",
    )
    head = git(path, "rev-parse", "HEAD")
    response = deliver(client, {**push(repo="acme/web"), "after": head})
    assert response.status_code == 201, response.content
    run = wait_terminal(Run.objects.get())
    assert run.status == "passed", (run.error_type, run.error_message)
    assert run.trigger == "webhook" and run.commit_sha == head and run.pr_number == 1


@pytest.mark.django_db(transaction=True)
def test_run_again_of_a_push_runs_the_branch_as_it_is_now(tmp_path, temporal_env, client):
    """A webhook run's ref is the pushed SHA. Run again after the branch moved on, it crawls
    the branch's new head, the commit its PR is based on (it crawled the old SHA and based the
    PR on the new head before)."""
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    repo = RepositoryFactory(
        full_name="acme/web", host="local", local_path=path, webhook_enabled=True
    )
    pushed = git(path, "rev-parse", "HEAD")
    assert deliver(client, {**push(repo="acme/web"), "after": pushed}).status_code == 201
    first = Run.objects.get()
    assert (first.ref, first.base_branch) == (pushed, "main")
    moved = commit_files(path, {"README.md": "moved on\n"})

    again = run_again(run=first)
    assert (again.ref, again.base_branch, again.repository) == ("main", "main", repo)
    pipeline._resolve_commits(again)  # what the crawl stage does first
    again.refresh_from_db()
    assert again.commit_sha == again.base_sha == moved


# --- the pushed SHA is the branch's head ---------------------------------------------------------


def test_a_push_whose_sha_is_not_the_branch_head_starts_no_run(client, repo, hub, api_env):
    moved = hub.push("acme/shop", "main", {"README.md": "# moved on\n"})
    response = deliver(client, push(), delivery="d-stale")
    assert response.status_code == 200 and response.json()["status"] == "ignored"
    note = webhook_deliveries.NOT_THE_HEAD.format(
        sha=SHA, branch="main", repo="acme/shop", head=moved
    )
    assert response.json()["note"] == note
    delivery = WebhookDelivery.objects.get()
    assert (delivery.outcome, delivery.note, delivery.pushed_sha) == ("ignored", note, SHA)
    assert not Run.objects.exists()
    assert hub.count("GET", r"/git/ref/heads/main$") == 1  # asked the host, nothing else


def test_a_forged_sha_of_another_repository_starts_no_run(client, repo, hub):
    forged = hub.create_repo("evil/fork", {"steal.js": "fetch('https://evil.test')\n"})
    response = deliver(client, {**push(), "after": forged})
    assert response.json()["status"] == "ignored" and "is not the head" in response.json()["note"]
    assert not Run.objects.exists()


def test_a_watched_branch_the_host_does_not_have_starts_no_run(client, hub):
    RepositoryFactory(full_name="acme/shop", webhook_enabled=True, webhook_branches=["gone"])
    response = deliver(client, push("gone"))
    assert response.json()["status"] == "ignored"
    assert response.json()["note"].startswith("gone cannot be read from acme/shop: ")
    assert WebhookDelivery.objects.get().outcome == "ignored" and not Run.objects.exists()


def test_a_host_that_cannot_answer_records_nothing_so_a_redelivery_retries(
    client, repo, hub, api_env
):
    hub.server_error(calls=1, method="GET", path=r"/git/ref/")
    response = deliver(client, push(), delivery="d-down")
    problem = assert_problem(response, 503, "host-unavailable")
    assert problem["detail"] == webhook_deliveries.HOST_UNREACHABLE.format(
        sha=SHA, branch="main", repo="acme/shop"
    )
    assert "500" not in problem["detail"] and problem["error_id"]  # internals go to the log
    assert nothing_recorded()
    assert deliver(client, push(), delivery="d-down").status_code == 201


@pytest.mark.django_db(transaction=True)
def test_the_local_host_answers_the_head_question_too(tmp_path, client, api_env):
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    RepositoryFactory(full_name="acme/web", host="local", local_path=path, webhook_enabled=True)
    old = git(path, "rev-parse", "HEAD")
    new = commit_files(path, {"README.md": "moved on\n"})
    stale = deliver(client, {**push(repo="acme/web"), "after": old})
    assert stale.json()["status"] == "ignored" and "is not the head of main" in stale.json()["note"]
    assert deliver(client, {**push(repo="acme/web"), "after": new}).status_code == 201
    assert Run.objects.get().ref == new
