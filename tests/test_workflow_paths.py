"""The check and maintenance workflows' paths no other module takes, on the real worker: a
check run of code that is not the repository's own, held on verify_tests until approved (or
failed there when rejected or left undecided), its GitHub check run queued with a link to the
approval meanwhile, then in progress and completed with the result on that same check run (or
completed saying it was rejected or expired); a check run whose tests cannot run, reported on
GitHub before it fails on verify_tests (and on both stages when the report fails too); a
maintenance run whose pull request GitHub forbids, failed on that stage. Some of their
histories are among the released replay fixtures (docs/releasing.md)."""

import asyncio

import pytest

from amtp_site.temporal import connect
from approvals.services import approval_decide
from runs import checks
from runs.models import ArtifactKind, Run
from runs.services import run_cancel, run_create
from runs.temporal.check_workflow import FORK_APPROVAL
from runs.temporal.worker_thread import WorkerThread
from tests import webhook_support
from tests.factories import RepositoryFactory
from tests.temporal_worker import wait_for, wait_terminal, worker_setting
from tests.test_cancel import wait_until
from tests.test_check_runs import SPEC
from tests.test_maintenance_faults import (
    PREVIEW,
    REPO,
    check_run,
    slow_reverify,
    with_stored_report,
)
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)
from tests.test_workflow_verify import closed_port_url
from tests.webhook_support import SHA, deliver

pytestmark = pytest.mark.django_db(transaction=True)
hub = webhook_support.hub  # acme/shop on the fake GitHub, main at SHA


def stage_query(run: Run) -> str:
    """The run's workflow answering its ``stage`` query."""

    async def ask() -> str:
        client = await connect()
        return await client.get_workflow_handle(str(run.run_id)).query("stage")

    return asyncio.run(ask())


PUBLIC = "https://amtp.example.com"  # AMTP_PUBLIC_URL: the check run links the run's page


def held_check(hub, run: Run) -> dict:
    """The run's check run once it shows the hold (queued), checked as the pull request shows
    it: waiting for an approval, with where to give it."""
    wait_until(lambda: any(c["status"] == "queued" for c in hub.check_runs(REPO)), 30, "hold")
    (check,) = hub.check_runs(REPO)
    assert (check["external_id"], check["status"], check["conclusion"]) == (
        str(run.run_id),
        "queued",
        None,
    )
    page = f"{PUBLIC}/admin/runs/run/{run.run_id}/change/"
    assert check["details_url"] == page
    assert check["output"]["title"] == checks.HELD_TITLE == "Waiting for an approval"
    assert f"Approve or reject it on the run's page in AMTP: {page}" in check["output"]["summary"]
    assert check["annotations"] == []
    return check


def test_a_check_run_held_for_approval_runs_once_approved(
    hub, temporal_env, settings, monkeypatch, tmp_path
):
    worker_setting(settings, monkeypatch, "AMTP_PUBLIC_URL", PUBLIC)
    run = check_run(held=True)
    marker = tmp_path / "reverifying"
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=1, interceptors=[slow_reverify(marker, 2)]):
        wait_for(run, lambda r: r.approvals.filter(decision="pending").exists(), 60)
        held = held_check(hub, run)  # shown while it waits; nothing of the fork's code ran
        assert not marker.exists()
        assert run.stages.get(name="verify_tests").status == "awaiting_approval"
        assert stage_query(run) == "verify_tests"  # what `temporal workflow query` shows
        approval = run.approvals.get()
        assert (approval.approver, approval.comment) == ("policy", FORK_APPROVAL)
        approval_decide(approval=approval, decision="approved", decided_by="alice", comment="")
        wait_until(marker.exists, 30, "ReverifyTests to start")
        (running,) = hub.check_runs(REPO)  # approved: in progress while the tests run
        assert (running["id"], running["status"]) == (held["id"], "in_progress")
        assert running["output"]["title"] == "Approved: the tests are running"
        assert running["output"]["summary"].startswith("Approved by alice. The tests run against")
        run = wait_terminal(run, 60)
    assert run.status == "passed", (run.error_type, run.error_message)
    (check,) = hub.check_runs(REPO)  # the same check run, completed with the result
    assert (check["id"], check["external_id"]) == (held["id"], str(run.run_id))
    assert (check["status"], check["conclusion"]) == ("completed", "neutral")
    assert run.stages.get(name="report_check").note == f"check run {held['id']}: neutral"


def test_a_check_run_whose_tests_cannot_run_reports_why_then_fails(
    hub, temporal_env, settings, monkeypatch, tmp_path
):
    head = hub.push(REPO, "main", {"e2e/amtp/shop.spec.ts": SPEC})
    url = closed_port_url()
    repository = RepositoryFactory(full_name=REPO, allowed_hosts=["127.0.0.1"])
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = run_create(
            repository=repository, ref=head, target_url=url, kind="check", pull_number=7
        )
        run = wait_terminal(run, 90)
    assert (run.status, run.error_type) == ("failed", "TargetUnreachable"), run.error_message
    assert stage_ends(run) == {
        "verify_tests": ("failed", "TargetUnreachable"),
        "report_check": ("passed", ""),
    }
    assert failure_report(run)["stage"] == "verify_tests"  # not the report that followed it
    (check,) = hub.check_runs(REPO)
    assert (check["head_sha"], check["status"]) == (head, "completed")
    assert check["conclusion"] != "success"


def test_a_check_run_whose_tests_and_report_both_fail_ends_both_stages_failed(
    hub, temporal_env, settings, monkeypatch, tmp_path
):
    worker_setting(settings, monkeypatch, "AMTP_VERIFY_EVIDENCE_DIR", tmp_path / "evidence")
    head = hub.push(REPO, "main", {"e2e/amtp/shop.spec.ts": SPEC})
    hub.forbid(REPO)  # the check run cannot be written: the report fails too
    repository = RepositoryFactory(full_name=REPO, allowed_hosts=["127.0.0.1"])
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = run_create(
            repository=repository,
            ref=head,
            target_url=closed_port_url(),
            kind="check",
            pull_number=7,
        )
        run = wait_terminal(run, 90)
    assert (run.status, run.error_type) == ("failed", "GitHubForbidden"), run.error_message
    assert stage_ends(run) == {
        "verify_tests": ("failed", "TargetUnreachable"),
        "report_check": ("failed", "GitHubForbidden"),
    }
    assert failure_report(run)["stage"] == "report_check"
    assert hub.check_runs(REPO) == []


HOLD_ENDS = {  # how the check run completes: conclusion, title, what the summary says
    "rejected": (
        "action_required",
        "Not run: the approval was rejected",
        "the approval to run this code was rejected by bob: no \\*tests\\* here",
    ),
    # without AMTP_PUBLIC_URL no page to act on: action_required needs a details_url
    "rejected-without-a-public-url": (
        "cancelled",
        "Not run: the approval was rejected",
        "the approval to run this code was rejected by bob: no \\*tests\\* here",
    ),
    "expired": (
        "timed_out",
        "Not run: nobody approved in time",
        "The tests did not run: nobody decided the policy approval within 2 s",
    ),
}


@pytest.mark.parametrize("decided", list(HOLD_ENDS))
def test_a_check_run_held_then_rejected_or_expired_fails_on_the_stage_that_waited(
    hub, temporal_env, settings, monkeypatch, decided
):
    public = "" if decided.endswith("without-a-public-url") else PUBLIC
    worker_setting(settings, monkeypatch, "AMTP_PUBLIC_URL", public)
    if decided == "expired":
        worker_setting(settings, monkeypatch, "AMTP_APPROVAL_TIMEOUT_S", 2)
    run = check_run(held=True)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        wait_for(run, lambda r: r.approvals.exists(), 60)
        approval = run.approvals.get()
        assert approval.stage.name == "verify_tests"
        if public:
            held = held_check(hub, run)
        else:  # the summary says where to approve instead
            wait_until(lambda: hub.check_runs(REPO), 30, "the hold on GitHub")
            (held,) = hub.check_runs(REPO)
            assert (held["status"], held["details_url"]) == ("queued", None)
            assert f"under Approvals (run `{run.run_id}`)" in held["output"]["summary"]
        if decided.startswith("rejected"):
            comment = "no *tests* here"
            approval_decide(
                approval=approval, decision="rejected", decided_by="bob", comment=comment
            )
        run = wait_terminal(run, 60)
    error_type = "ApprovalTimedOut" if decided == "expired" else "ApprovalRejected"
    assert (run.status, run.error_type) == ("failed", error_type), run.error_message
    assert stage_ends(run) == {
        "verify_tests": ("failed", error_type),
        "report_check": ("skipped", ""),
    }
    assert failure_report(run) == {
        "error": error_type,
        "message": run.error_message,
        "stage": "verify_tests",
    }
    assert run.approvals.get().decision == "rejected"
    conclusion, title, says = HOLD_ENDS[decided]
    (check,) = hub.check_runs(REPO)  # the same check run, completed: none of the code ran
    assert (check["id"], check["status"], check["conclusion"]) == (
        held["id"],
        "completed",
        conclusion,
    )
    assert check["output"]["title"] == title
    assert says in check["output"]["summary"]
    assert "What to do:" in check["output"]["summary"]
    assert '"Re-run" starts a new run of this commit' in check["output"]["summary"]
    assert check["annotations"] == []


def test_re_run_of_a_rejected_check_holds_again_and_runs_once_approved(
    hub, client, temporal_env, settings, monkeypatch
):
    """GitHub's "Re-run" on the check run a rejection completed: a new check run of the same
    commit, held again (the code is still not the repository's own), shown queued on a check
    run of its own, and run once someone approves it this time."""
    worker_setting(settings, monkeypatch, "AMTP_PUBLIC_URL", PUBLIC)
    repository = RepositoryFactory(
        full_name=REPO,
        allowed_hosts=["127.0.0.1"],
        webhook_secret=webhook_support.SECRET,
        pr_checks=True,
        pr_preview_url_template="http://127.0.0.1:9/?pr={pr}",
    )
    url = "http://127.0.0.1:9/?pr=7"  # never asked: the repository holds no tests to run
    first = run_create(
        repository=repository, ref=SHA, target_url=url, kind="check", pull_number=7, held=True
    )
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        wait_for(first, lambda r: r.approvals.exists(), 60)
        rejected = held_check(hub, first)
        approval_decide(
            approval=first.approvals.get(), decision="rejected", decided_by="bob", comment="no"
        )
        first = wait_terminal(first, 60)
        wait_until(lambda: hub.check_runs(REPO)[0]["status"] == "completed", 30, "rejection")
        rerun = hub.rerequest_payload(REPO, rejected["id"], sender="carol")
        assert deliver(client, rerun, event="check_run").status_code == 201
        second = Run.objects.exclude(pk=first.pk).get()
        wait_for(second, lambda r: r.approvals.exists(), 60)
        wait_until(lambda: len(hub.check_runs(REPO)) == 2, 30, "the re-run's hold")
        shown = hub.check_runs(REPO)[1]
        approval = second.approvals.get()
        approval_decide(approval=approval, decision="approved", decided_by="alice", comment="")
        second = wait_terminal(second, 60)
    assert (first.status, first.error_type) == ("failed", "ApprovalRejected")
    assert (second.kind, second.ref, second.pull_number) == ("check", SHA, 7)
    assert (second.requested_by, second.held) == ("github:carol", True)
    assert second.status == "passed", (second.error_type, second.error_message)
    assert (approval.approver, approval.comment) == ("policy", FORK_APPROVAL)
    assert (shown["external_id"], shown["status"]) == (str(second.run_id), "queued")
    old, new = hub.check_runs(REPO)
    assert (old["id"], old["conclusion"]) == (rejected["id"], "action_required")
    assert (new["id"], new["status"], new["conclusion"]) == (shown["id"], "completed", "neutral")
    assert new["output"]["title"] != checks.HELD_TITLE


def test_a_check_run_cancelled_while_held_concludes_its_check_run_cancelled(
    hub, temporal_env, settings, monkeypatch
):
    worker_setting(settings, monkeypatch, "AMTP_PUBLIC_URL", PUBLIC)
    run = check_run(held=True)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        wait_for(run, lambda r: r.approvals.exists(), 60)
        held = held_check(hub, run)
        run_cancel(run=run)
        run = wait_terminal(run, 60)
        wait_until(lambda: hub.check_runs(REPO)[0]["status"] == "completed", 30, "the cancel")
    assert run.status == "cancelled"
    (check,) = hub.check_runs(REPO)
    assert (check["id"], check["conclusion"]) == (held["id"], "cancelled")
    assert check["output"]["title"] == checks.CANCELLED_TITLE


def test_a_hold_github_does_not_take_still_waits_and_runs_once_approved(hub, temporal_env):
    """The hold shown on GitHub is best effort: no Checks permission (403, final) leaves the
    run held as before, the refusal the held stage's note while it waits, and ReportCheckRun's
    own failure is what the run then ends with."""
    hub.forbid(REPO)
    run = check_run(held=True)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        wait_for(run, lambda r: r.stages.get(name="verify_tests").note, 60)
        held = run.stages.get(name="verify_tests")
        assert (held.status, held.error_type) == ("awaiting_approval", "")
        assert held.note.startswith("GitHub did not take the hold's check run (queued): Git")
        assert "GitHubForbidden" in held.note and "shows no AMTP check" in held.note
        approval = run.approvals.get()
        approval_decide(approval=approval, decision="approved", decided_by="alice", comment="")
        run = wait_terminal(run, 60)
    assert (run.status, run.error_type) == ("failed", "GitHubForbidden"), run.error_message
    assert stage_ends(run) == {  # no tests in the repository: verify_tests skipped
        "verify_tests": ("skipped", ""),
        "report_check": ("failed", "GitHubForbidden"),
    }
    assert hub.check_runs(REPO) == []


def test_a_rejection_github_does_not_take_is_the_held_stages_note_after_the_run(hub, temporal_env):
    """The hold is shown, then GitHub refuses its rejection (the token lost the Checks
    permission meanwhile): the check run stays queued there, and the failed run's page says
    so on the stage that waited, beside the rejection."""
    run = check_run(held=True)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        wait_until(lambda: hub.check_runs(REPO), 60, "the hold on GitHub")
        hub.forbid(REPO)
        approval = run.approvals.get()
        approval_decide(approval=approval, decision="rejected", decided_by="bob", comment="no")
        run = wait_terminal(run, 60)
    assert (run.status, run.error_type) == ("failed", "ApprovalRejected"), run.error_message
    held = run.stages.get(name="verify_tests")
    assert (held.status, held.error_type) == ("failed", "ApprovalRejected")
    assert held.note.startswith("GitHub did not take the hold's check run (cancelled): Git")
    assert "its earlier state (queued)" in held.note
    (check,) = hub.check_runs(REPO)
    assert (check["status"], check["conclusion"]) == ("queued", None)


def stage_ends(run: Run) -> dict:
    return {
        name: (status, error)
        for name, status, error in run.stages.values_list("name", "status", "error_type")
    }


def failure_report(run: Run) -> dict:
    return run.artifacts.get(kind=ArtifactKind.FAILURE_REPORT).content


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
