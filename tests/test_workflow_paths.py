"""The check and maintenance workflows' paths no other module takes, on the real worker: a
check run of code that is not the repository's own, held until approved; a check run whose
tests cannot run, reported on GitHub before it fails; a maintenance run whose pull request
GitHub forbids, failed on that stage. Their histories are among the released replay
fixtures (docs/releasing.md)."""

import pytest

from approvals.services import approval_decide
from runs.models import Run
from runs.services import run_create
from runs.temporal.check_workflow import FORK_APPROVAL
from runs.temporal.worker_thread import WorkerThread
from tests import webhook_support
from tests.factories import RepositoryFactory
from tests.temporal_worker import wait_for, wait_terminal, worker_setting
from tests.test_check_runs import SPEC
from tests.test_maintenance_faults import PREVIEW, REPO, check_run, with_stored_report
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)
from tests.test_workflow_verify import closed_port_url

pytestmark = pytest.mark.django_db(transaction=True)
hub = webhook_support.hub  # acme/shop on the fake GitHub, main at SHA


def test_a_check_run_held_for_approval_runs_once_approved(hub, temporal_env):
    run = check_run(held=True)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        wait_for(run, lambda r: r.approvals.filter(decision="pending").exists(), 60)
        assert hub.check_runs(REPO) == []  # nothing of the fork's code ran or was reported
        assert run.stages.get(name="verify_tests").status == "awaiting_approval"
        approval = run.approvals.get()
        assert (approval.approver, approval.comment) == ("policy", FORK_APPROVAL)
        approval_decide(approval=approval, decision="approved", decided_by="alice", comment="")
        run = wait_terminal(run, 60)
    assert run.status == "passed", (run.error_type, run.error_message)
    (check,) = hub.check_runs(REPO)
    assert (check["external_id"], check["conclusion"]) == (str(run.run_id), "neutral")


def test_a_check_run_whose_tests_cannot_run_reports_why_then_fails(
    hub, temporal_env, settings, monkeypatch, tmp_path
):
    worker_setting(settings, monkeypatch, "AMTP_VERIFY_EVIDENCE_DIR", tmp_path / "evidence")
    head = hub.push(REPO, "main", {"e2e/amtp/shop.spec.ts": SPEC})
    url = closed_port_url()
    repository = RepositoryFactory(full_name=REPO, allowed_hosts=["127.0.0.1"])
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = run_create(
            repository=repository, ref=head, target_url=url, kind="check", pull_number=7
        )
        run = wait_terminal(run, 90)
    assert (run.status, run.error_type) == ("failed", "TargetUnreachable"), run.error_message
    assert run.stages.get(name="verify_tests").error_type == "TargetUnreachable"
    (check,) = hub.check_runs(REPO)
    assert (check["head_sha"], check["status"]) == (head, "completed")
    assert check["conclusion"] != "success"


def test_a_maintenance_run_whose_pull_request_is_forbidden_fails_on_that_stage(hub, temporal_env):
    hub.fail(403, "Resource not accessible by integration", method="POST", path=r"/git/refs$")
    repo = RepositoryFactory(full_name=REPO, preview_url=PREVIEW)
    run = with_stored_report(run_create(repository=repo, kind="maintenance"))
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = wait_terminal(run, 60)
    assert (run.status, run.error_type) == ("failed", "GitHubForbidden"), run.error_message
    stages = dict(run.stages.values_list("name", "status"))
    assert stages == {"verify_tests": "passed", "create_pull_request": "failed"}
    assert hub.pulls(REPO) == []
    assert not Run.objects.filter(pr_number__isnull=False).exists()
