"""Check runs from deployments and on AMTP's own pull requests.

A repository whose PR preview URL template is ``{deployment}`` checks each commit when GitHub
says its deployment succeeded (``deployment_status``), against the URL the deployment gives,
once per head SHA; a generation run's pull request gets a check run from its VerifyTests
report, on the PR's head commit, surviving a GitHub 5xx."""

import pytest
from django.urls import reverse

from repositories.errors import RepositoryInvalid
from repositories.models import Repository
from repositories.services import PR_CHECKS_NEED_PREVIEW, repository_create
from repositories.targets import (
    PREVIEW_TEMPLATE_DEPLOYMENT,
    PREVIEW_TEMPLATE_PLACEHOLDER,
    TARGET_URL_CREDENTIALS,
)
from runs import pipeline, transitions
from runs.checks import CHECK_NAME, PR_NOT_CHECKED
from runs.demo.app import serving
from runs.models import Run
from runs.temporal.worker_thread import WorkerThread
from tests import webhook_support
from tests.contract_examples import ENGINEER_OUTPUT, VERIFICATION_REPORT
from tests.factories import ArtifactFactory, RepositoryFactory, RunFactory
from tests.temporal_worker import wait_terminal
from tests.test_admin import _repository_form
from tests.test_browser import chromium_path
from tests.test_check_runs import SHOP_FILES, checked_shop
from tests.test_check_runs import shop as shop_app
from tests.webhook_support import deliver, pull_request
from triggers.checks import FROM_DEPLOYMENTS, NO_SENDER
from triggers.deployments import NO_URL, PRODUCTION_IGNORED, STATE_IGNORED

pytestmark = pytest.mark.django_db
hub = webhook_support.hub  # shared fixture: acme/shop on the fake GitHub
PREVIEW = "http://127.0.0.1:9/feature"  # allow-listed below; nothing connects at submit


@pytest.fixture
def shop(hub):
    """acme/shop checked from its deployments; branch ``feature`` is at the returned SHA."""
    sha = hub.push("acme/shop", "feature", {"app.js": "1;\n"})
    checked_shop("{deployment}")
    return sha


def test_the_preview_setting_takes_a_url_template_or_deployment_alone():
    base = {"full_name": "acme/web", "host": "github", "pr_checks": True}
    for template in ("{deployment}", "https://pr-{pr}.preview.acme.test/{branch}?at={sha}"):
        repository_create(**base, pr_preview_url_template=template).delete()
    refused = {
        "": PR_CHECKS_NEED_PREVIEW,
        "https://{deployment}/": PREVIEW_TEMPLATE_DEPLOYMENT,
        "https://pr-{number}.acme.test": PREVIEW_TEMPLATE_PLACEHOLDER.replace(
            "{found}", "{number}"
        ),
        "https://me:pw@pr-{pr}.acme.test": TARGET_URL_CREDENTIALS,
        "ftp://pr-{pr}.acme.test": "with {pr}, {sha} and {branch} filled in: give an absolute",
    }
    for template, rule in refused.items():
        with pytest.raises(RepositoryInvalid) as raised:
            repository_create(**base, pr_preview_url_template=template)
        field = "pr_checks" if not template else "pr_preview_url_template"
        assert list(raised.value.errors) == [field], template
        assert rule in raised.value.errors[field][0], template


def test_the_admin_shows_the_template_rule_on_its_field(admin_client):
    add = reverse("admin:repositories_repository_add")
    form = _repository_form(host="github", pr_checks="on")
    answer = admin_client.post(add, {**form, "pr_preview_url_template": "https://{deployment}"})
    errors = answer.context["adminform"].form.errors
    assert errors["pr_preview_url_template"] == [PREVIEW_TEMPLATE_DEPLOYMENT]
    admin_client.post(add, {**form, "pr_preview_url_template": "{deployment}"})
    assert Repository.objects.get(full_name="acme/local").pr_preview_url_template == "{deployment}"


def test_a_successful_deployment_starts_one_check_run_for_its_sha(client, shop, hub):
    status = hub.deployment_status_payload("acme/shop", "feature", environment_url=PREVIEW)
    for state in ("pending", "in_progress", "failure"):
        answer = deliver(client, {**status, "deployment_status": {"state": state}}, event=EVENT)
        assert answer.json()["note"] == STATE_IGNORED.format(state=state)
    first = deliver(client, status, event=EVENT, delivery="d-1")
    assert first.status_code == 201, first.json()
    run = Run.objects.get()
    assert (run.kind, run.ref, run.target_url, run.held) == ("check", shop, PREVIEW, False)
    assert run.requested_by == "github:vercel[bot]" and run.pull_number is None
    again = [
        deliver(client, status, event=EVENT, delivery="d-1"),  # GitHub's redelivery
        deliver(client, status, event=EVENT),  # the same status, delivered twice
        deliver(  # the same commit, deployed to a second environment
            client,
            hub.deployment_status_payload(
                "acme/shop", "feature", environment="qa", environment_url=PREVIEW + "-qa"
            ),
            event=EVENT,
        ),
    ]
    for answer in again:
        assert (answer.status_code, answer.json()["status"]) == (200, "duplicate")
        assert answer.json()["run_id"] == str(run.run_id)
    # previews come from deployments: the deployment's check wins
    pull = pull_request(shop, action="synchronize")
    answer = deliver(client, pull, event="pull_request").json()
    assert answer["note"] == FROM_DEPLOYMENTS.format(repo="acme/shop", sha=shop)
    assert Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_deployment_gets_its_check_run_through_the_worker(
    hub, client, temporal_env, monkeypatch, settings, tmp_path
):
    settings.AMTP_VERIFY_TEST_TIMEOUT_S, settings.AMTP_VERIFY_RETRIES = 5, 0
    chromium_path()
    with serving(shop_app) as url:
        head = hub.push("acme/shop", "feature", SHOP_FILES)
        checked_shop("{deployment}")
        status = hub.deployment_status_payload("acme/shop", "feature", environment_url=url + "/")
        with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2):
            assert deliver(client, status, event=EVENT).status_code == 201
            run = wait_terminal(Run.objects.get(), 120)
    assert (run.kind, run.status, run.commit_sha) == ("check", "passed", head), run.error_message
    (check,) = hub.check_runs("acme/shop")
    assert (check["head_sha"], check["external_id"]) == (head, str(run.run_id))
    assert (check["conclusion"], check["output"]["title"]) == ("failure", "1 passed, 1 failed")
    assert f"Against {url}/ at `{head[:12]}`" in check["output"]["summary"]


def test_the_target_url_stands_in_for_a_missing_environment_url(client, shop, hub):
    status = hub.deployment_status_payload("acme/shop", "feature", target_url=PREVIEW)
    assert deliver(client, status, event=EVENT).status_code == 201
    assert Run.objects.get().target_url == PREVIEW
    bare = hub.deployment_status_payload("acme/shop", "main")
    assert deliver(client, bare, event=EVENT).json()["note"] == NO_URL


def test_a_deployment_not_at_its_branch_head_waits_for_an_approval(client, shop, hub):
    """A fork's pull request deployed from refs/pull/N/head (or a bare SHA, or a branch that
    moved on) is not the repository's own code: its tests run only once someone approves."""
    for ref in ("refs/pull/3/head", shop, "main"):
        status = hub.deployment_status_payload(
            "acme/shop", ref, sha=shop, environment_url=PREVIEW + f"?ref={len(ref)}"
        )
        deliver(client, status, event=EVENT)
        run = Run.objects.get()
        assert run.held is True, ref
        run.delete()


def test_nothing_runs_for_an_unknown_sender_production_or_another_setting(client, shop, hub):
    status = hub.deployment_status_payload("acme/shop", "feature", environment_url=PREVIEW)
    nobody = {k: v for k, v in status.items() if k != "sender"}
    assert deliver(client, nobody, event=EVENT).json()["note"] == NO_SENDER
    production = hub.deployment_status_payload(
        "acme/shop", "feature", environment="production", environment_url=PREVIEW
    )
    note = PRODUCTION_IGNORED.format(environment="production")
    assert deliver(client, production, event=EVENT).json()["note"] == note
    flagged = {**status, "deployment": {**status["deployment"], "production_environment": True}}
    assert deliver(client, flagged, event=EVENT).json()["status"] == "ignored"
    Repository.objects.update(pr_preview_url_template="https://pr-{pr}.acme.test")
    answer = deliver(client, status, event=EVENT).json()
    assert answer["status"] == "ignored" and "{deployment}" in answer["note"]
    assert Run.objects.count() == 0


def test_hostile_deployment_statuses_are_refused_by_name(client, shop, hub):
    status = hub.deployment_status_payload("acme/shop", "feature", environment_url=PREVIEW)
    malformed = {
        **status,
        "deployment": {"sha": "not-a-sha", "ref": "feature"},
        "deployment_status": "success",
    }
    answer = deliver(client, malformed, event=EVENT)
    assert answer.status_code == 400 and "deployment_status payload" in answer.json()["detail"]
    fields = {e["field"] for e in answer.json()["errors"]}
    assert fields == {"deployment.sha", "deployment_status"}
    for url, rule in [
        ("http://169.254.169.254/latest/meta-data/?k=s3cret", "169.254.169.254 is a link-local"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254 is a private address"),
        ("https://user:pw@preview.acme.test/", TARGET_URL_CREDENTIALS),
        ("javascript:alert(1)", "give an absolute http"),
    ]:
        hostile = hub.deployment_status_payload("acme/shop", "feature", environment_url=url)
        answer = deliver(client, hostile, event=EVENT)
        assert (answer.status_code, answer.json()["status"]) == (200, "ignored"), url
        assert rule in answer.json()["note"], (url, answer.json()["note"])
        assert "s3cret" not in answer.json()["note"]  # query strings carry tokens
    assert Run.objects.count() == 0


def test_a_generation_pull_request_gets_its_check_run_despite_a_5xx(hub, valkey):
    repository = RepositoryFactory(
        full_name="acme/shop", pr_checks=True, pr_preview_url_template="{deployment}"
    )
    run = _generated(repository, hub)
    hub.server_error(status=502, method="PATCH", path=r"/check-runs/\d+$")  # made, not done
    with pytest.raises(Exception) as raised:  # Temporal retries CreatePullRequest
        pipeline.create_pull_request(str(run.run_id))
    assert type(raised.value).__name__ == "GitHubUnavailable"
    run.refresh_from_db()
    assert run.pr_number == 1  # the PR is open and recorded before the check
    assert [check["status"] for check in hub.check_runs("acme/shop")] == ["in_progress"]
    pipeline.create_pull_request(str(run.run_id))  # the retry adopts the PR, reports the check
    pipeline.create_pull_request(str(run.run_id))  # and finds that check run again
    (pull,) = hub.pulls("acme/shop")
    (check,) = hub.check_runs("acme/shop")
    assert (check["name"], check["head_sha"]) == (CHECK_NAME, pull["head"]["sha"])
    assert (check["external_id"], check["conclusion"]) == (str(run.run_id), "success")
    assert check["output"]["title"] == "1 passed, 0 failed"
    stage = run.stages.get(name="create_pull_request")
    assert (stage.status, stage.note) == ("passed", f"check run {check['id']}: success")
    assert stage.attempts == 2 and Run.objects.get().pr_number == pull["number"]


def test_a_pull_request_stands_when_the_check_run_is_refused(hub, valkey):
    repository = RepositoryFactory(full_name="acme/shop", pr_checks=True)
    run = _generated(repository, hub)
    hub.fail(403, "Resource not accessible by integration", path=r"/check-runs")
    pipeline.create_pull_request(str(run.run_id))
    stage = run.stages.get(name="create_pull_request")
    assert stage.status == "passed" and stage.note.startswith(PR_NOT_CHECKED.split("{")[0])
    assert "403" in stage.note and len(hub.pulls("acme/shop")) == 1
    assert hub.check_runs("acme/shop") == []


def test_no_check_run_without_pr_checks(hub, valkey):
    run = _generated(RepositoryFactory(full_name="acme/shop"), hub)
    pipeline.create_pull_request(str(run.run_id))
    assert len(hub.pulls("acme/shop")) == 1 and hub.count(path="/check-runs") == 0
    assert run.stages.get(name="create_pull_request").note == ""


EVENT = "deployment_status"


def _generated(repository, hub) -> Run:
    """A generation run of acme/shop's main up to CreatePullRequest, verified."""
    head = hub.head("acme/shop", "main")
    run = RunFactory(repository=repository, commit_sha=head, base_sha=head, status="running")
    transitions.create_stages(run)
    for kind, content in [
        ("test_engineer_output", ENGINEER_OUTPUT),
        ("verification_report", VERIFICATION_REPORT),
    ]:
        ArtifactFactory(run=run, kind=kind, content={**content, "run_id": str(run.run_id)})
    return run
