"""TestGenerationWorkflow on the real Temporal dev server, worker, PostgreSQL and Valkey."""

import json
import time

import pytest

from amtp_site import valkey as valkey_mod
from approvals.models import Approval
from approvals.services import approval_decide
from repositories.hosts.local import LocalGitHost
from runs import pipeline
from runs.errors import OrchestratorUnavailable
from runs.models import Artifact, Run
from runs.pull_requests import head_branch_for
from runs.services import run_cancel, run_create
from runs.temporal import types as t
from runs.transitions import run_end
from tests.factories import RepositoryFactory
from tests.gitrepo import commit_files, git, make_git_repo
from tests.histories import fixture_name, record_history, run_history
from tests.samples import DEMO_MOBILE, DEMO_WEB
from tests.temporal_worker import wait_for, wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)


def slot_released(repo, timeout=15.0) -> bool:
    """The slot is released in the workflow's `finally`, just after the run's terminal mark."""
    deadline = time.monotonic() + timeout
    while valkey_mod.concurrency_count(repo.full_name) and time.monotonic() < deadline:
        time.sleep(0.1)
    return valkey_mod.concurrency_count(repo.full_name) == 0


def local_repo(tmp_path, name, files, **settings):
    path = make_git_repo(tmp_path / name, files)
    return RepositoryFactory(
        full_name=f"acme/{name}", host="local", local_path=str(path), **settings
    )


@pytest.mark.parametrize("framework,files", [("playwright", DEMO_WEB), ("maestro", DEMO_MOBILE)])
def test_happy_path_on_the_local_host(tmp_path, worker, framework, files):
    repo = local_repo(tmp_path, framework, files)
    run = wait_terminal(run_create(repository=repo, target_framework=framework, depth_level="core"))
    assert run.status == "passed", (run.error_type, run.error_message)
    stages = {s.name: s.status for s in run.stages.all()}
    assert stages == {
        "crawl_repo": "passed",
        # no target URL: the app is not booted (the suite turns BootApp off; a mobile app
        # is never booted)
        "boot_app": "skipped",
        "explore_app": "skipped",  # no target URL
        "generate_test_cases": "passed",
        "generate_test_code": "passed",
        "verify_tests": "skipped",  # the repository has no preview URL: nothing to run against
        "create_pull_request": "passed",
    }
    kinds = set(run.artifacts.values_list("kind", flat=True))
    assert kinds == {
        "repo_crawler_output",
        "test_case_generator_output",
        "test_engineer_output",
        "verification_report",
        "pull_request",
    }
    code = run.artifacts.get(kind="test_engineer_output").content
    head = head_branch_for(run)
    assert run.head_branch == head and run.pr_number == 1
    listed = git(repo.local_path, "ls-tree", "-r", "--name-only", head).split()
    assert {f["path"] for f in code["files"]} <= set(listed)
    pids = [
        run.artifacts.get(kind=k).meta["pid"]
        for k in ("repo_crawler_output", "test_case_generator_output", "test_engineer_output")
    ]
    assert len(set(pids)) == 3, "each agent must run in a fresh process"
    assert slot_released(repo)
    # Bookkeeping is local (markers, no task-queue round trip): one step to start, one to
    # end. Web tests without a target URL have nothing to run: GenerateTestCode closes
    # VerifyTests as skipped and says so; Maestro flows get an activity (and a process) to
    # list them.
    scheduled, local, patches = history_outline(run)
    assert patches == []
    agents = ["CrawlRepo", "GenerateTestCases", "GenerateTestCode", "CreatePullRequest"]
    if framework == "maestro":
        agents.insert(3, "VerifyTests")
    assert scheduled == agents
    assert local == [t.START_RUN, t.END_RUN]
    verify = run.stages.get(name="verify_tests")
    assert (verify.status, verify.attempts) == ("skipped", 1)  # no target URL, no device
    assert run.finished_at is not None


def test_the_end_and_the_skip_asked_again_change_nothing(tmp_path, worker):
    """EndRun and the skip decision are retried until they succeed, so each may be asked
    again after it did its work (its answer lost): a run ends where the first end put it,
    and a late cancel does not move a passed run."""
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    run = wait_terminal(run_create(repository=repo, depth_level="core"))
    assert run.status == "passed", (run.error_type, run.error_message)
    run_id = str(run.run_id)
    report = str(run.artifacts.get(kind="verification_report").artifact_id)

    def state():
        run.refresh_from_db()
        stages = list(run.stages.order_by("position").values_list("status", "attempts", "note"))
        return run.status, run.finished_at, stages, run.artifacts.count()

    before = state()
    assert pipeline.skip_verification(run_id) is True
    assert pipeline.verify_tests(run_id) == report
    assert run_end(run_id=run_id, status=t.PASSED) is False
    assert run_end(run_id=run_id, status=t.CANCELLED) is False
    assert state() == before and slot_released(repo)
    assert len(LocalGitHost(repo.full_name, repo.local_path).pull_requests()) == 1


def scheduled_activities(run) -> tuple[list[str], list[str]]:
    """(regular activities scheduled, local activities recorded), in order, from the run's
    workflow history."""
    scheduled, local, _ = history_outline(run)
    return scheduled, local


def history_outline(run) -> tuple[list[str], list[str], list[str]]:
    """(regular activities scheduled, local activities recorded, patch markers), in order,
    from the run's workflow history."""
    scheduled, local, patches = [], [], []
    for event in run_history(run.run_id).events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled.append(event.activity_task_scheduled_event_attributes.activity_type.name)
        elif event.HasField("marker_recorded_event_attributes"):
            details = event.marker_recorded_event_attributes.details
            if "data" in details:  # a local activity's marker
                local.append(json.loads(details["data"].payloads[0].data)["activity_type"])
            if "patch-data" in details:
                patches.append(json.loads(details["patch-data"].payloads[0].data)["id"])
    return scheduled, local, patches


def test_policy_gate_approve_opens_the_pr(tmp_path, worker):
    repo = local_repo(tmp_path, "gated", DEMO_WEB, require_approval=True)
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.stages.filter(status="awaiting_approval").exists())
    approval = Approval.objects.get(run=run, decision="pending")
    assert approval.approver == "policy"
    assert not Artifact.objects.filter(run=run, kind="pull_request").exists()
    approval_decide(approval=approval, decision="approved", decided_by="alice", comment="ok")
    run = wait_terminal(run)
    assert run.status == "passed" and run.pr_number == 1


def test_policy_gate_reject_fails_the_run_with_the_comment(tmp_path, worker):
    repo = local_repo(tmp_path, "gated", DEMO_WEB, require_approval=True)
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    approval_decide(
        approval=run.approvals.get(), decision="rejected", decided_by="bob", comment="not this week"
    )
    run = wait_terminal(run)
    assert run.status == "failed" and run.error_type == "ApprovalRejected"
    assert "not this week" in run.error_message and "bob" in run.error_message
    assert head_branch_for(run) not in git(repo.local_path, "branch")


def test_stale_base_fails_with_the_spec_failure_report(tmp_path, worker):
    repo = local_repo(tmp_path, "stale", DEMO_WEB, require_approval=True)
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    moved = commit_files(repo.local_path, {"README.md": "moved on\n"}, message="base moves")
    approval_decide(approval=run.approvals.get(), decision="approved", decided_by="alice")
    run = wait_terminal(run)
    assert run.status == "failed" and run.error_type == "StaleBaseBranch"
    assert run.stages.get(name="create_pull_request").status == "failed"
    report = run.artifacts.get(kind="failure_report").content
    assert report == {
        "error": "StaleBaseBranch",
        "base_branch": "main",
        "observed_head": moved,
        "expected_parent": run.commit_sha,
    }


def test_cancel_mid_run_releases_everything_and_opens_no_pr(tmp_path, worker):
    repo = local_repo(tmp_path, "cancel", DEMO_WEB, require_approval=True)
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    assert valkey_mod.concurrency_count(repo.full_name) == 1
    run_cancel(run=run)
    run = wait_terminal(run)
    assert run.status == "cancelled"
    assert run.stages.get(name="create_pull_request").status == "cancelled"
    assert run.approvals.get().decision == "rejected"
    assert not run.artifacts.filter(kind="pull_request").exists()
    assert slot_released(repo)
    assert valkey_mod.client().get(valkey_mod.pr_lock_key(repo.full_name)) is None


@pytest.fixture(autouse=True)
def record_histories(request):
    """`AMTP_RECORD_HISTORIES=1 make test PYTEST_ARGS=tests/test_workflow.py` records the
    replay fixtures (tests/test_replay.py) of these real runs (tests/histories.py)."""
    yield
    for run in Run.objects.all():
        record_history(run, fixture_name(request.node.name))


def test_an_unreachable_temporal_leaves_the_approval_pending(tmp_path, worker, settings):
    repo = local_repo(tmp_path, "gated", DEMO_WEB, require_approval=True)
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    approval = run.approvals.get()
    address, settings.TEMPORAL_ADDRESS = settings.TEMPORAL_ADDRESS, "127.0.0.1:9"
    with pytest.raises(OrchestratorUnavailable, match="still pending"):
        approval_decide(approval=approval, decision="approved", decided_by="alice")
    approval.refresh_from_db()
    assert approval.decision == "pending" and approval.decided_by == ""
    settings.TEMPORAL_ADDRESS = address
    approval_decide(approval=approval, decision="approved", decided_by="alice")
    assert wait_terminal(run).status == "passed"


def test_nobody_deciding_in_time_fails_the_run_clearly(tmp_path, worker, settings):
    settings.AMTP_APPROVAL_TIMEOUT_S = 2
    repo = local_repo(tmp_path, "gated", DEMO_WEB, require_approval=True)
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"))
    assert run.status == "failed" and run.error_type == "ApprovalTimedOut"
    assert "start a new run" in run.error_message
    approval = run.approvals.get()
    assert approval.decision == "rejected" and approval.decided_by == "amtp (timeout)"
    assert run.stages.get(name="create_pull_request").status == "failed"


def test_an_unknown_provider_fails_the_first_stage_once(tmp_path, worker, monkeypatch):
    monkeypatch.setenv("AMTP_LLM_PROVIDER", "foo")  # read by the spawned agent processes
    repo = local_repo(tmp_path, "misconfigured", DEMO_WEB)
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"))
    assert run.status == "failed" and run.error_type == "ConfigurationError"
    assert run.error_message == (
        "AMTP_LLM_PROVIDER='foo' is not a provider; set it to one of anthropic, openai, offline"
    )
    stage = run.stages.get(name="crawl_repo")
    assert stage.status == "failed" and stage.attempts == 1  # not retried: a setting to fix
    assert slot_released(repo)
