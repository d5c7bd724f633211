"""The whole pipeline on the GitHub host, against the fake GitHub API over HTTP."""

import pytest

from approvals.models import Approval
from approvals.services import approval_decide
from runs.pull_requests import head_branch_for
from runs.services import run_create
from tests.factories import RepositoryFactory
from tests.fakes.github_api import FakeGitHub
from tests.notify_receiver import local_receiver
from tests.samples import DEMO_WEB
from tests.temporal_worker import wait_for, wait_terminal
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def github(temporal_env, monkeypatch):
    with FakeGitHub() as gh:
        gh.create_repo("acme/web", DEMO_WEB)
        for key, value in {
            "GITHUB_API_URL": gh.url,
            "GITHUB_TOKEN": gh.token,
            "GITHUB_SECONDS_BETWEEN_WRITES": "0",
        }.items():
            monkeypatch.setenv(key, value)  # for the spawned agent processes
            setattr(temporal_env, key, type(getattr(temporal_env, key))(value))
        yield gh


@pytest.fixture
def receiver(settings):
    with local_receiver(settings) as server:
        yield server


def test_one_ref_one_commit_one_pr(github, worker):
    repo = RepositoryFactory(full_name="acme/web", host="github")
    run = wait_terminal(run_create(repository=repo, depth_level="core"))
    assert run.status == "passed", (run.error_type, run.error_message)
    assert github.count("POST", r"/git/refs$") == 1
    assert github.count("POST", r"/git/commits$") == 1
    assert github.count("POST", r"/pulls$") == 1
    (pull,) = github.pulls("acme/web")
    assert pull["head"]["ref"] == head_branch_for(run) and run.pr_number == pull["number"]
    code = run.artifacts.get(kind="test_engineer_output").content
    files = github.files("acme/web", head_branch_for(run))
    for f in code["files"]:
        assert files[f["path"]] == ("100644", f["contents"].encode())
    assert "package.json" in files  # built on top of the base tree


@pytest.mark.parametrize("answer", ["message", "opaque"])
def test_branch_protection_holds_for_approval_then_opens_the_pr(github, worker, answer):
    # "message": GitHub names the rule; "opaque": a bare 422 "Reference update failed", which
    # only the branch's rules (GET rules/branches/{branch}) tell apart from a transient one
    github.protect("acme/web", "amtp/*", ruleset=True, answer=answer)
    repo = RepositoryFactory(full_name="acme/web", host="github")
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.stages.filter(status="awaiting_approval").exists())
    approval = Approval.objects.get(run=run, decision="pending")
    assert approval.approver == "branch-protection" and "rule" in approval.comment.lower()
    assert "creation" in approval.comment  # which rule, for the approver
    assert github.count("POST", r"/git/refs$") == 1  # a refusal is not retried
    assert github.pulls("acme/web") == []
    github.repo("acme/web").protections.clear()  # the operator fixed the protection
    approval_decide(approval=approval, decision="approved", decided_by="alice")
    run = wait_terminal(run)
    assert run.status == "passed" and len(github.pulls("acme/web")) == 1


def test_branch_protection_rejected_fails_the_run(github, worker, receiver):
    """...and the repository's webhook hears of the hold, then of the failure, once each."""
    github.protect("acme/web", "amtp/*", answer="errors")  # the rule in errors[] only
    repo = RepositoryFactory(
        full_name="acme/web", host="github", notify_webhook_url=receiver.url + "?via=test"
    )
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    wait_for(run, lambda r: len(receiver.posts) == 1, timeout=30)
    assert receiver.posts[0]["body"]["amtp"]["event"] == "run_held"
    assert receiver.posts[0]["path"].endswith("?via=test")
    approval_decide(
        approval=run.approvals.get(),
        decision="rejected",
        decided_by="bob",
        comment="ask the admins first",
    )
    run = wait_terminal(run)
    assert run.status == "failed" and "ask the admins first" in run.error_message
    assert github.pulls("acme/web") == []
    wait_for(run, lambda r: len(receiver.posts) == 2, timeout=30)
    assert receiver.posts[1]["body"]["amtp"]["event"] == "run_failed"
    assert set(run.notifications.values_list("status", flat=True)) == {"sent"}


def test_forbidden_token_fails_with_the_error_on_the_stage(github, worker):
    github.forbid("acme/web")
    repo = RepositoryFactory(full_name="acme/web", host="github")
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"))
    assert run.status == "failed" and run.error_type == "GitHubForbidden"
    stage = run.stages.get(name="create_pull_request")
    assert (
        stage.status == "failed" and stage.error_type == "GitHubForbidden" and stage.error_message
    )
    assert run.artifacts.get(kind="failure_report").content["error"] == "GitHubForbidden"
