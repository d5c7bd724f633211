"""reconcile_runs (R17): runs whose workflow can no longer end them are ended truthfully, runs
that never started are started, runs whose workflow is alive are left alone. Real PostgreSQL,
Valkey and Temporal; stub stages (tests/stub_stages.py) around the real workflow."""

import threading
import time
from datetime import timedelta
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from temporalio.client import WorkflowExecutionStatus

from amtp_site import valkey as valkey_mod
from amtp_site.temporal import connect
from runs import transitions
from runs.models import Run
from runs.services import run_create
from runs.temporal.reconcile import GONE, NO_WORKFLOW, reconcile_runs
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory, RunFactory
from tests.stub_stages import stub_activities
from tests.temporal_worker import wait_for, wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)


def _age(run: Run, seconds: float = 3600) -> None:
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=seconds))


def _never_started(repository, **fields) -> Run:
    """A run saved but never started: what a 503 at submit leaves behind."""
    run = RunFactory(repository=repository, **fields)
    transitions.create_stages(run)
    _age(run)
    return run


def _workflow(run_id: str, action: str = "describe", **kwargs):
    async def call():
        handle = (await connect()).get_workflow_handle(run_id)
        return await getattr(handle, action)(**kwargs)

    return async_to_sync(call)()


def test_a_terminated_workflow_ends_its_run_truthfully_and_gives_everything_back(temporal_env):
    """The row says running, the workflow was terminated by hand: the reconciler leaves the
    run alone while its workflow lives, then fails it naming the termination and its reason,
    fails the stage it was in, skips the rest, frees its slot; a second pass does nothing."""
    repo = RepositoryFactory(full_name="acme/terminated")
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=1, activities=stub_activities(30, slow="crawl_repo")):
        run = run_create(repository=repo)
        wait_for(run, lambda r: r.stages.get(name="crawl_repo").status == "running", 60)
        assert valkey_mod.concurrency_count(repo.full_name) == 1
        [alive] = reconcile_runs(grace_s=0)
        assert (alive.workflow, alive.action) == ("RUNNING", "left")
        _workflow(str(run.pk), "terminate", reason="operator pulled the plug")
        [ended] = reconcile_runs(grace_s=0)
    run.refresh_from_db()
    assert (ended.was, ended.workflow, ended.action) == ("running", "TERMINATED", "failed")
    assert (run.status, run.error_type) == ("failed", "WorkflowTerminated")
    assert "was terminated on Temporal (operator pulled the plug)" in run.error_message
    assert dict(run.stages.values_list("name", "status")) == {
        "crawl_repo": "failed",
        "boot_app": "skipped",
        "explore_app": "skipped",
        "generate_test_cases": "skipped",
        "generate_test_code": "skipped",
        "verify_tests": "skipped",
        "create_pull_request": "skipped",
    }
    report = run.artifacts.get(kind="failure_report").content
    assert (report["error"], report["stage"]) == ("WorkflowTerminated", "crawl_repo")
    assert valkey_mod.concurrency_count(repo.full_name) == 0
    assert reconcile_runs(grace_s=0) == []  # idempotent: nothing is open any more


def test_a_pending_run_that_never_started_is_started_once_by_concurrent_reconcilers(
    temporal_env,
):
    """Two reconcilers at once start the never-started run's workflow once (its id is the run
    id); the run then passes. A run younger than the grace period is not touched."""
    repo = RepositoryFactory(full_name="acme/pending")
    stuck = _never_started(repo)
    fresh = RunFactory(repository=repo)  # just saved: its submitter may be starting it now
    outcomes = []

    def reconcile():
        try:
            outcomes.extend(reconcile_runs(grace_s=60))
        finally:
            connection.close()  # this thread's own

    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, activities=stub_activities()):
        threads = [threading.Thread(target=reconcile) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        stuck = wait_terminal(stuck, 60)
        # The run shows passed before the workflow's last activity (its slot) completes.
        _workflow(str(stuck.pk), "result")
    # Each reconciler saw the run pending; the one that asked Temporal second finds the
    # workflow the first started (running, or already completed: then the run has passed and
    # is left as it is). Never a second start, never a failure.
    assert {(o.run_id, o.was) for o in outcomes} == {(str(stuck.pk), "pending")}
    seen = [(o.workflow, o.action) for o in outcomes]
    assert (NO_WORKFLOW, "started") in seen, seen
    assert set(seen) <= {(NO_WORKFLOW, "started"), ("RUNNING", "left"), ("COMPLETED", "passed")}
    assert stuck.status == "passed"
    assert _workflow(str(stuck.pk)).status == WorkflowExecutionStatus.COMPLETED
    fresh.refresh_from_db()
    assert fresh.status == "pending"


def test_a_running_run_without_a_workflow_fails_and_frees_its_place(temporal_env):
    repo = RepositoryFactory(full_name="acme/gone")
    run = _never_started(repo, status="running")
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now())
    run.stages.filter(name="crawl_repo").update(status="running")
    valkey_mod.concurrency_incr(repo.full_name, str(run.pk), limit=2, lease=60)
    dry = StringIO()
    call_command("reconcile_runs", "--grace", "60", "--dry-run", stdout=dry)
    assert f"{run.pk} running, workflow {NO_WORKFLOW} -> would be failed" in dry.getvalue()
    assert Run.objects.get(pk=run.pk).status == "running"  # a dry run changes nothing

    out = StringIO()
    call_command("reconcile_runs", "--grace", "60", stdout=out)
    run.refresh_from_db()
    assert (run.status, run.error_type, run.error_message) == ("failed", NO_WORKFLOW, GONE)
    assert run.stages.get(name="crawl_repo").status == "failed"
    assert valkey_mod.concurrency_count(repo.full_name) == 0
    assert "1 open runs older than 60 s; 1 reconciled" in out.getvalue()


def test_an_unreachable_temporal_changes_nothing_and_says_so(temporal_env):
    run = _never_started(RepositoryFactory(full_name="acme/offline"), status="running")
    temporal_env.TEMPORAL_ADDRESS = "127.0.0.1:1"
    started = time.monotonic()
    with pytest.raises(CommandError, match="could not reach Temporal at 127.0.0.1:1"):
        call_command("reconcile_runs", "--grace", "0")
    assert time.monotonic() - started < 30
    assert Run.objects.get(pk=run.pk).status == "running"
    with pytest.raises(CommandError, match="--grace: must be 0 or more"):
        call_command("reconcile_runs", "--grace", "-1")
