"""The 0.9 -> 1.0 drain (issue 43): a run whose workflow an earlier AMTP started, in a shape
today's workflow no longer has, is ended truthfully and says why, never left running.

Real PostgreSQL, Valkey and Temporal. A worker of "the old release" (tests/old_workflow.py,
same workflow type, another command sequence) starts the run and stops mid-stage; today's
worker then replays its history, meets the nondeterminism, fails the workflow instead of
retrying its task forever, and reconcile_runs ends the run."""

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connections
from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from amtp_site import valkey as valkey_mod
from amtp_site.temporal import connect
from approvals.activities import request_approval
from approvals.models import Approval
from approvals.services import approval_decide
from runs import transitions
from runs.services import run_create
from runs.temporal import activities as run_activities
from runs.temporal import types as t
from runs.temporal.reconcile import (
    INCOMPATIBLE,
    NONDETERMINISM,
    WORKFLOW_INCOMPATIBLE,
    _workflows,
    reconcile_runs,
)
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory
from tests.old_workflow import OldHoldingWorkflow, OldShapeWorkflow
from tests.stub_stages import _name, stub_activities
from tests.temporal_worker import wait_for, wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)


def _stage_begin(run_id: str) -> None:
    try:
        transitions.stage_begin(run_id, t.STAGE_OF[t.GENERATE_TEST_CASES])
    finally:
        connections.close_all()


@activity.defn(name=t.GENERATE_TEST_CASES)
async def old_stage(run_id: str) -> str:
    """The old release's stage: under way until its worker is stopped for the upgrade."""
    await sync_to_async(_stage_begin, thread_sensitive=False)(run_id)
    await activity.wait_for_worker_shutdown()
    raise ApplicationError("the worker stopped for the upgrade")  # retried on today's worker


def _closed(run_id: str, timeout: float) -> WorkflowExecutionStatus:
    """The workflow's status once it is no longer running (or still RUNNING at ``timeout``)."""

    async def wait():
        handle = (await connect()).get_workflow_handle(run_id)
        deadline = time.monotonic() + timeout
        status = (await handle.describe()).status
        while status == WorkflowExecutionStatus.RUNNING and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
            status = (await handle.describe()).status
        return status

    return async_to_sync(wait)()


def test_a_run_left_on_the_old_workflow_shape_ends_failed_saying_why(temporal_env):
    """The old release's worker starts the run (its workflow: MarkRunRunning, then
    GenerateTestCases) and is stopped mid-stage; today's worker fails the workflow, the
    reconciler ends the run WorkflowIncompatible, its slot freed, no pull request."""
    repo = RepositoryFactory(full_name="acme/upgraded")
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    old = WorkerThread(
        queue,
        processes=1,
        workflows=[OldShapeWorkflow],
        activities=[run_activities.start_run, old_stage],
    ).start()
    try:
        run = run_create(repository=repo)
        wait_for(run, lambda r: r.stages.get(name="generate_test_cases").status == "running", 30)
    finally:
        old.stop()  # the upgrade: the old worker stops with the run mid-stage
    with WorkerThread(queue, processes=1, activities=stub_activities()):
        # Today's worker runs the retried stage, replays the history and fails the workflow
        # (without workflow_failure_exception_types it would retry its task forever).
        assert _closed(str(run.pk), 30) == WorkflowExecutionStatus.FAILED
        [outcome] = reconcile_runs(grace_s=0)
    run.refresh_from_db()
    assert (outcome.workflow, outcome.action) == ("FAILED", "failed"), outcome
    assert (run.status, run.error_type) == ("failed", WORKFLOW_INCOMPATIBLE)
    assert run.error_message.startswith(INCOMPATIBLE), run.error_message
    assert "Nondeterminism error" in run.error_message  # Temporal's own words follow
    assert valkey_mod.concurrency_count(repo.full_name) == 0  # its slot given back
    assert run.pr_url == ""
    assert run.stages.get(name="create_pull_request").status == "skipped"
    assert reconcile_runs(grace_s=0) == []


def test_a_run_held_on_the_old_workflow_shape_ends_failed_once_its_approval_is_decided(
    temporal_env,
):
    """A run the old release held for approval (not drained: nobody decided before the
    upgrade). Today's worker leaves it alone while nothing happens to it, reconcile too; the
    approval, decided after the upgrade, wakes it: the worker fails the workflow, reconcile
    ends the run WorkflowIncompatible, its slot freed, no pull request."""
    repo = RepositoryFactory(full_name="acme/held-upgraded")
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    old = WorkerThread(
        queue,
        processes=1,
        workflows=[OldHoldingWorkflow],
        activities=[run_activities.start_run, request_approval],
    ).start()
    try:
        run = run_create(repository=repo)
        wait_for(run, lambda r: r.approvals.filter(decision="pending").exists(), 30)
    finally:
        old.stop()  # the upgrade, the run still held
    with WorkerThread(queue, processes=1, activities=stub_activities()):
        [held] = reconcile_runs(grace_s=0)
        assert (held.workflow, held.action) == ("RUNNING", "left")  # nothing happened to it
        assert _closed(str(run.pk), 1) == WorkflowExecutionStatus.RUNNING
        approval = Approval.objects.get(run=run, decision="pending")
        approval_decide(approval=approval, decision="approved", decided_by="alice")
        assert _closed(str(run.pk), 30) == WorkflowExecutionStatus.FAILED
        [outcome] = reconcile_runs(grace_s=0)
    run.refresh_from_db()
    assert (outcome.workflow, outcome.action) == ("FAILED", "failed"), outcome
    assert (run.status, run.error_type) == ("failed", WORKFLOW_INCOMPATIBLE)
    assert run.error_message.startswith(INCOMPATIBLE), run.error_message
    assert valkey_mod.concurrency_count(repo.full_name) == 0
    assert run.pr_url == ""
    assert list(run.approvals.values_list("decision", "decided_by")) == [("approved", "alice")]
    stages = dict(run.stages.values_list("name", "status"))
    assert stages["create_pull_request"] == "failed", stages  # where it was held
    assert set(stages.values()) == {"failed", "skipped"}, stages


@activity.defn(name=t.CRAWL_REPO)
async def crawl_posing_as_temporal(run_id: str) -> str:
    raise ApplicationError(
        f"{NONDETERMINISM} from the repository", type="RepositoryAccessError", non_retryable=True
    )


def test_an_activity_error_worded_like_temporals_is_not_taken_for_an_upgrade(temporal_env):
    """Hostile: an activity's message (repository or model text may reach one) that starts
    with Temporal's nondeterminism code does not make reconcile call the run incompatible."""
    repo = RepositoryFactory(full_name="acme/posing")
    others = [a for a in stub_activities() if _name(a) != t.CRAWL_REPO]
    with WorkerThread(
        temporal_env.TEMPORAL_TASK_QUEUE,
        processes=1,
        activities=[crawl_posing_as_temporal, *others],
    ):
        run = wait_terminal(run_create(repository=repo), 30)
        assert _closed(str(run.pk), 30) == WorkflowExecutionStatus.FAILED
    seen = async_to_sync(_workflows)([str(run.pk)])[str(run.pk)]
    assert seen.why.startswith(NONDETERMINISM)  # the activity's words reach reconcile ...
    assert not seen.incompatible  # ... but are not taken for the worker's
    assert (run.status, run.error_type) == ("failed", "RepositoryAccessError")  # by EndRun
