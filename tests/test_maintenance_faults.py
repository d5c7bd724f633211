"""Maintenance and check runs under the faults generation runs survive: a cancel stops them
(no pull request, the slot given back, a check run concluded ``cancelled`` on GitHub), a
worker SIGKILLed during ReverifyTests loses nothing and doubles nothing, and GitHub answering
5xx, before or after it carried a write out, leaves one check run and one pull request.

Most runs here start from the state a ReverifyTests attempt leaves when it stored its report
and died before reporting (``with_stored_report``): the real ReverifyTests then reuses that
report, so the faults around it cost seconds, not a Playwright run each. The one SIGKILL test
runs Playwright for real."""

import json
import time

import pytest

from amtp_site import valkey as valkey_mod
from amtp_site.canonical import idempotency_key
from repositories.errors import GitHubUnavailable
from repositories.hosts.local import LocalGitHost
from runs import artifacts, transitions
from runs.checks import CANCELLED_TITLE, CHECK_NAME
from runs.demo.app import serving
from runs.models import Run
from runs.services import run_cancel, run_create
from runs.stages import REVERIFY_TESTS
from runs.temporal.worker_thread import WorkerThread
from schemas import schema_id
from tests import webhook_support
from tests.contract_examples import valid
from tests.factories import RepositoryFactory
from tests.gitrepo import git, make_git_repo
from tests.histories import run_history
from tests.slow_host import SlowDown
from tests.temporal_worker import wait_terminal, worker_setting
from tests.test_browser import chromium_path
from tests.test_github_host import make_host
from tests.test_worker_crash import finish_on_a_second_worker, start_then_kill
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)
from tests.webhook_support import SHA
from verification.service import REPORT_SCHEMA

pytestmark = pytest.mark.django_db(transaction=True)
hub = webhook_support.hub  # acme/shop on the fake GitHub, main at SHA
REPO = "acme/shop"
HEALED = "e2e/amtp/users.spec.ts"  # the file the stored report healed


# Never reached: the runs below find their verification report already stored.
PREVIEW = "https://preview.example.com"


def with_stored_report(run: Run) -> Run:
    """``run`` as a ReverifyTests attempt leaves it that pinned the commit, stored a report
    with one healed file (so a pull request follows) and died before reporting."""
    Run.objects.filter(pk=run.pk).update(commit_sha=SHA, base_sha=SHA)
    transitions.stage_begin(str(run.run_id), "verify_tests")
    report = {**valid("verification/report"), "run_id": str(run.run_id)}
    kind, schema = "verification_report", schema_id(REPORT_SCHEMA)
    key = idempotency_key(str(run.run_id), REVERIFY_TESTS, {"commit": SHA})
    artifacts.store(run, kind, schema, report, {}, key, REVERIFY_TESTS)
    return run


def check_run(**fields) -> Run:
    """A check run of pull request #7 at the fake's main (as a pull_request delivery makes)."""
    repository = RepositoryFactory(full_name=REPO, allowed_hosts=["127.0.0.1"])
    url = "http://127.0.0.1:9/?pr=7"  # never asked: the repository holds no tests to run
    return run_create(
        repository=repository, ref=SHA, target_url=url, kind="check", pull_number=7, **fields
    )


def cancel_in_reverify_tests(temporal_env, marker) -> WorkerThread:
    """A worker whose ReverifyTests takes its time, writing ``marker`` once it has begun.
    Heartbeat timeout 4 s: the cancel reaches the activity on a heartbeat's answer, which the
    SDK sends at most every 0.8 × that timeout."""
    temporal_env.AMTP_HEARTBEAT_TIMEOUT_S = 4
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    return WorkerThread(queue, processes=1, interceptors=[slow_reverify(marker)])


def slow_reverify(marker, seconds: float = 30) -> SlowDown:
    """ReverifyTests takes ``seconds`` before it starts, ``marker`` written once it has begun."""
    return SlowDown(REVERIFY_TESTS, seconds, where="before", marker=str(marker))


def activity_attempts(run: Run, activity_type: str) -> int:
    """The attempt that completed ``activity_type`` in the run's workflow history."""
    events = json.loads(run_history(run.run_id).to_json())["events"]
    scheduled = {
        e["eventId"]
        for e in events
        if e.get("activityTaskScheduledEventAttributes", {}).get("activityType", {}).get("name")
        == activity_type
    }
    (started,) = [
        e["activityTaskStartedEventAttributes"]
        for e in events
        if e.get("activityTaskStartedEventAttributes", {}).get("scheduledEventId") in scheduled
    ]
    return started["attempt"]


def wait_until(predicate, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


# --- cancel --------------------------------------------------------------------------------


def test_a_maintenance_run_cancelled_in_reverify_tests_opens_no_pr(hub, temporal_env, tmp_path):
    """Were it not cancelled, this run would open a pull request (the 5xx test below opens
    it from the same state)."""
    repo = RepositoryFactory(full_name=REPO, preview_url=PREVIEW)
    run = with_stored_report(run_create(repository=repo, kind="maintenance"))
    marker = tmp_path / "reverifying"
    with cancel_in_reverify_tests(temporal_env, marker):
        wait_until(marker.exists, "ReverifyTests to start")
        asked = time.monotonic()
        run_cancel(run=run)
        run = wait_terminal(run, timeout=30)
        wait_until(lambda: not valkey_mod.concurrency_count(REPO), "the slot", 15)
        print(f"maintenance run {run.status} {time.monotonic() - asked:.1f} s after the cancel")
    assert (run.status, run.error_type) == ("cancelled", ""), run.error_message
    assert dict(run.stages.values_list("name", "status")) == {
        "verify_tests": "cancelled",
        "create_pull_request": "cancelled",
    }
    assert hub.pulls(REPO) == [] and hub.count("POST") == 0  # nothing written on GitHub
    assert not run.artifacts.filter(kind="pull_request").exists()


def test_a_cancelled_check_run_is_concluded_cancelled_on_github(hub, temporal_env, tmp_path):
    """GitHub's conclusion ``cancelled`` (docs.github.com/rest/checks/runs#update-a-check-run):
    the pull request shows why there is no result, and offers "Re-run"."""
    run = check_run()
    marker = tmp_path / "reverifying"
    with cancel_in_reverify_tests(temporal_env, marker):
        wait_until(marker.exists, "ReverifyTests to start")
        asked = time.monotonic()
        run_cancel(run=run)
        run = wait_terminal(run, timeout=30)
        wait_until(lambda: not valkey_mod.concurrency_count(REPO), "the slot", 15)
        wait_until(lambda: hub.check_runs(REPO), "the check run", 15)
        print(f"check run concluded on GitHub {time.monotonic() - asked:.1f} s after the cancel")
    assert (run.status, run.error_type) == ("cancelled", ""), run.error_message
    (check,) = hub.check_runs(REPO)
    assert (check["name"], check["head_sha"], check["external_id"]) == (
        CHECK_NAME,
        SHA,
        str(run.run_id),
    )
    assert (check["status"], check["conclusion"]) == ("completed", "cancelled")
    assert check["output"]["title"] == CANCELLED_TITLE


# --- GitHub 5xx ------------------------------------------------------------------------------


def test_a_check_run_is_reported_once_through_5xx_answers(hub, temporal_env):
    """The create is carried out but answered 502 (its answer lost), then the completion is
    refused with 503: Temporal's retries find the check run by its external_id and finish it;
    GitHub has one."""
    hub.fail(502, "Bad Gateway", method="POST", path=r"/check-runs$", applied=True)
    hub.server_error(status=503, method="PATCH", path=r"/check-runs/\d+$")
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = wait_terminal(check_run(), timeout=60)
    assert run.status == "passed", (run.error_type, run.error_message)
    (check,) = hub.check_runs(REPO)
    assert (check["external_id"], check["status"], check["conclusion"]) == (
        str(run.run_id),
        "completed",
        "neutral",  # the repository holds no tests: nothing to run, said so
    )
    assert hub.count("POST", r"/check-runs$") == 1 and hub.count("PATCH", r"/check-runs/") == 2
    stage = run.stages.get(name="report_check")
    assert (stage.status, stage.attempts) == ("passed", 3)
    assert stage.note == f"check run {check['id']}: neutral"


def test_a_maintenance_pull_request_is_opened_once_through_5xx_answers(hub, temporal_env):
    """The head branch's creation is refused with 503, then the pull request is opened but
    answered 502: the retries adopt the branch, then the pull request; GitHub has one."""
    hub.server_error(status=503, method="POST", path=r"/git/refs$")
    hub.fail(502, "Bad Gateway", method="POST", path=r"/pulls$", applied=True)
    repo = RepositoryFactory(full_name=REPO, preview_url=PREVIEW)
    run = with_stored_report(run_create(repository=repo, kind="maintenance"))
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = wait_terminal(run, timeout=60)
    assert run.status == "passed", (run.error_type, run.error_message)
    (pull,) = hub.pulls(REPO)
    assert (run.pr_number, pull["head"]["ref"]) == (pull["number"], run.head_branch)
    assert HEALED in hub.files(REPO, run.head_branch)
    assert hub.count("POST", r"/pulls$") == 1
    # The first attempt's commit object stays unreferenced, as on GitHub: one branch shows.
    assert [ref for ref in hub.refs(REPO) if "amtp/" in ref] == [f"refs/heads/{run.head_branch}"]
    assert run.artifacts.get(kind="pull_request").content["adopted"] is True
    assert run.artifacts.filter(kind="verification_report").count() == 1
    assert run.stages.get(name="create_pull_request").attempts == 3


NOTES = [
    {
        "path": "e2e/amtp/a.spec.ts",
        "start_line": i,
        "end_line": i,
        "annotation_level": "failure",
        "message": f"failure {i}",
    }
    for i in range(1, 121)
]


@pytest.mark.parametrize(
    ("method", "count"),
    [("POST", 120), ("PATCH", 120), ("PATCH", 30)],
    ids=["the-create", "a-batch-of-annotations", "the-completion"],
)
def test_a_lost_answer_adds_no_check_run_and_no_annotation_twice(hub, method, count):
    """A write carried out but answered 502: the create, the first batch of 50 annotations
    (GitHub appends each batch) or the completing request. The retry finds the check run by
    its external_id and sends only what it lacks."""
    host = make_host(hub, REPO)
    hub.fail(502, "Bad Gateway", method=method, path=r"/check-runs(/\d+)?$", applied=True)
    report = {
        "head_sha": SHA,
        "name": CHECK_NAME,
        "external_id": "run-1",
        "conclusion": "failure",
        "title": "t",
        "summary": "s",
        "annotations": NOTES[:count],
    }
    with pytest.raises(GitHubUnavailable):
        host.report_check_run(**report)
    done = host.report_check_run(**report)
    (check,) = hub.check_runs(REPO)
    assert (done.check_run_id, check["status"], check["conclusion"]) == (
        check["id"],
        "completed",
        "failure",
    )
    assert [a["start_line"] for a in check["annotations"]] == list(range(1, count + 1))
    assert hub.count("POST", r"/check-runs$") == 1


def test_a_shown_check_run_is_adopted_after_a_lost_answer_and_completed_once(hub):
    """A held check run shown queued (its create carried out but answered 502): the retry
    adopts it, the report completes that same one, and showing it again after that leaves the
    result as it is."""
    host = make_host(hub, REPO)
    hub.fail(502, "Bad Gateway", method="POST", path=r"/check-runs$", applied=True)
    shown = {
        "head_sha": SHA,
        "name": CHECK_NAME,
        "external_id": "run-1",
        "status": "queued",
        "title": "Waiting",
        "summary": "s",
        "details_url": "https://amtp.example.com/admin/runs/run/run-1/change/",
    }
    with pytest.raises(GitHubUnavailable):
        host.show_check_run(**shown)
    first = host.show_check_run(**shown)
    done = host.report_check_run(
        **{k: shown[k] for k in ("head_sha", "name", "external_id", "details_url")},
        conclusion="action_required",
        title="Rejected",
        summary="s",
        annotations=[],
    )
    again = host.show_check_run(**{**shown, "status": "in_progress"})
    (check,) = hub.check_runs(REPO)
    assert first.check_run_id == done.check_run_id == again.check_run_id == check["id"]
    assert (check["status"], check["conclusion"]) == ("completed", "action_required")
    assert check["output"]["title"] == "Rejected"
    assert hub.count("POST", r"/check-runs$") == 1


# --- a worker killed ------------------------------------------------------------------------

GONE_SPEC = """// Generated by AMTP (offline rule-based provider) — review before merging.
import { test, expect } from '@playwright/test';

test('tc_about: the about page shows its heading', async ({ page }) => {
  await page.goto('/about');
  await expect(page.getByRole('heading', { name: 'About' })).toBeVisible();
});
"""


def test_a_worker_killed_in_reverify_tests_leaves_one_report_and_one_pr(
    tmp_path, temporal_env, settings, monkeypatch
):
    """The first worker ran the tests and stored the report, then its process group is
    SIGKILLed before the stage closed: the second reuses the report (the app is not asked
    again) and opens the one pull request."""
    chromium_path()
    for name, value in {
        "AMTP_HEARTBEAT_TIMEOUT_S": 6,  # the dead worker's attempt is retried after it
        "AMTP_VERIFY_TEST_TIMEOUT_S": 5,
        "AMTP_VERIFY_RETRIES": 0,
        "AMTP_VERIFY_HEAL_ROUNDS": 0,  # /about is gone: quarantined, nothing to heal
    }.items():
        worker_setting(settings, monkeypatch, name, value)
    hits = []

    def app(environ, start_response):
        hits.append(environ["PATH_INFO"])
        found = environ["PATH_INFO"] == "/"
        start_response("200 OK" if found else "404 Not Found", [("Content-Type", "text/html")])
        return [b"<!doctype html><title>Notes</title><h1>Notes</h1>"]

    with serving(app) as url:
        path = make_git_repo(tmp_path / "notes", {"README.md": "# notes\n", HEALED: GONE_SPEC})
        repo = RepositoryFactory(
            full_name="acme/notes",
            host="local",
            local_path=str(path),
            preview_url=url,
            allowed_hosts=["127.0.0.1"],
        )
        marker, queue = tmp_path / "reverified", settings.TEMPORAL_TASK_QUEUE
        hang = f"fault:{REVERIFY_TESTS}:hang:{marker}"
        run = start_then_kill(tmp_path, queue, repo, hang, marker, kind="maintenance")
        asked_before, killed = len(hits), time.monotonic()
        run = finish_on_a_second_worker(tmp_path, queue, run)
        print(f"maintenance run {run.status} {time.monotonic() - killed:.1f} s after the kill")
    assert run.status == "passed", (run.error_type, run.error_message)
    assert len(hits) == asked_before  # the tests did not run again
    assert sorted(run.artifacts.values_list("kind", flat=True)) == [
        "pull_request",
        "verification_report",
    ]
    (test,) = run.artifacts.get(kind="verification_report").content["tests"]
    assert test["status"] == "quarantined" and test["reason"].startswith("page removed")
    assert activity_attempts(run, REVERIFY_TESTS) == 2  # Temporal's retry, on the second worker
    (pull,) = LocalGitHost(repo.full_name, repo.local_path).pull_requests()
    assert pull["head_branch"] == run.head_branch
    assert git(path, "branch", "--list", "amtp/*").count("amtp/") == 1
    assert "test.fixme(" in git(path, "show", f"{run.head_branch}:{HEALED}")
