"""Bring runs whose workflow can no longer end them to a true terminal state (R17).

A run's workflow is what ends it. A run can outlive its workflow: Temporal was unreachable
when the run was submitted (the API answered 503 and the client sent no Idempotency-Key to
retry with), or the workflow closed without its last bookkeeping step (terminated by an
operator, timed out, failed while PostgreSQL was down for longer than anything retries).
``reconcile_runs`` asks Temporal about every open run older than a grace period:

- no workflow, run ``pending``: it never started; start it now (what the submitter asked for);
- no workflow, run ``running``: its history is gone (retention, a Temporal reset); fail it;
- workflow closed: end the run as the workflow ended (cancelled, or failed naming how)
  through ``runs.transitions.run_end``, the same end the workflow's EndRun writes; a workflow
  the worker failed because an earlier AMTP started it in another shape (an upgrade) is
  ``WorkflowIncompatible``, and the message says to start the run again;
- workflow running: leave it, the worker ends it.

Every write is one of runs.transitions' compare-and-swaps and starting is idempotent (the
workflow id is the run id), so it is safe to run repeatedly, concurrently with itself and
with the worker.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from amtp_site.temporal import connect
from runs import pull_requests, transitions
from runs.errors import OrchestratorUnavailable
from runs.models import Run, Stage, StageStatus
from runs.stages import Failure
from runs.temporal.dispatcher import run_start
from runs.transitions import OPEN_RUN

logger = logging.getLogger(__name__)

NO_WORKFLOW = "NoWorkflow"  # the run's workflow does not exist on Temporal
CLOSED_AS = {
    WorkflowExecutionStatus.COMPLETED: "WorkflowCompleted",
    WorkflowExecutionStatus.FAILED: "WorkflowFailed",
    WorkflowExecutionStatus.TERMINATED: "WorkflowTerminated",
    WorkflowExecutionStatus.TIMED_OUT: "WorkflowTimedOut",
}
ENDED = (
    "its workflow {how} on Temporal{why} without recording the run's end; "
    "ended by reconcile_runs. Start a new run"
)
HOW = {
    "WorkflowCompleted": "completed",
    "WorkflowFailed": "failed",
    "WorkflowTerminated": "was terminated",
    "WorkflowTimedOut": "timed out",
}
# The worker fails a workflow whose history its code cannot replay (workflow_failure_exception_types
# in runs/temporal/worker.py); the SDK's failure carries Temporal's code for nondeterminism,
# https://docs.temporal.io/references/errors#non-deterministic-error
NONDETERMINISM = "[TMPRL1100]"
WORKFLOW_INCOMPATIBLE = "WorkflowIncompatible"
INCOMPATIBLE = (
    "this run was started by an earlier AMTP whose workflow this version's worker cannot "
    "continue (an upgrade changed the workflow's steps; drain runs before upgrading, see "
    "docs/operations.md, Upgrading); ended by reconcile_runs. Start the run again"
)
GONE = (
    "its workflow is not on Temporal (its history is past the namespace's retention, or "
    "Temporal lost it) while the run was running; ended by reconcile_runs. Start a new run"
)


@dataclass(frozen=True)
class Outcome:
    run_id: str
    was: str  # the run's status before
    workflow: str  # the workflow's status on Temporal, or NoWorkflow
    action: str  # left, started, failed, passed, cancelled (or "would ..." in a dry run)
    detail: str = ""

    def __str__(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.run_id} {self.was}, workflow {self.workflow} -> {self.action}{detail}"


@dataclass(frozen=True)
class WorkflowSeen:
    """A run's workflow as Temporal described it."""

    status: WorkflowExecutionStatus | None  # None: no such workflow
    why: str = ""  # for a closed one: the reason or failure Temporal recorded
    incompatible: bool = False  # failed by the worker: its code cannot replay the history


def reconcile_runs(*, grace_s: float, dry_run: bool = False) -> list[Outcome]:
    """Reconcile every open run created more than ``grace_s`` ago; what happened to each.
    Raises OrchestratorUnavailable (and changes nothing) when Temporal cannot be reached."""
    cutoff = timezone.now() - timedelta(seconds=grace_s)
    runs = list(
        Run.objects.filter(status__in=OPEN_RUN, created_at__lt=cutoff)
        .select_related("repository")
        .order_by("created_at")
    )
    if not runs:
        return []
    found = async_to_sync(_workflows)([str(run.pk) for run in runs])
    return [reconcile_run(run, found[str(run.pk)], dry_run) for run in runs]


async def _workflows(run_ids: list[str]) -> dict[str, WorkflowSeen]:
    try:
        client = await connect()
    except RuntimeError as exc:
        raise OrchestratorUnavailable(
            f"could not reach Temporal at {settings.TEMPORAL_ADDRESS}: {exc}; nothing was changed"
        ) from exc
    return {run_id: await _workflow(client, run_id) for run_id in run_ids}


async def _workflow(client: Client, run_id: str) -> WorkflowSeen:
    handle = client.get_workflow_handle(run_id)
    try:
        status = (await handle.describe()).status
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return WorkflowSeen(None)
        raise OrchestratorUnavailable(f"could not ask Temporal about run {run_id}: {exc}") from exc
    if status in (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW):
        return WorkflowSeen(status)
    try:
        await handle.result(follow_runs=False)
        return WorkflowSeen(status)
    except WorkflowFailureError as exc:
        cause = exc.cause
        # The SDK's own failure has no cause; an activity's error (whose message is not ours
        # to trust) always sits under the workflow's.
        incompatible = cause.__cause__ is None and str(cause).startswith(NONDETERMINISM)
        while cause.__cause__ is not None:  # the innermost: the reason or the activity's error
            cause = cause.__cause__
        return WorkflowSeen(status, getattr(cause, "message", "") or str(cause), incompatible)


def reconcile_run(run: Run, workflow: WorkflowSeen, dry_run: bool) -> Outcome:
    """One run, as read before asking Temporal (it may have moved since: every end is a
    compare-and-swap), brought in line with its ``workflow``."""
    run_id = str(run.pk)
    seen = workflow.status.name if workflow.status is not None else NO_WORKFLOW
    outcome = Outcome(run_id, run.status, seen, "left")
    if workflow.status in (
        WorkflowExecutionStatus.RUNNING,
        WorkflowExecutionStatus.CONTINUED_AS_NEW,
    ):
        return outcome
    if workflow.status is None and run.status == Run.Status.PENDING:
        if not dry_run:
            try:
                run_start(run)  # starting twice (a concurrent reconciler) is one workflow
            except OrchestratorUnavailable as exc:
                return _did(outcome, "left", str(exc), dry_run)
        return _did(outcome, "started", "it had never started", dry_run)
    if workflow.status == WorkflowExecutionStatus.CANCELED:
        if not dry_run:
            _cancel(run)
        return _did(outcome, "cancelled", "its workflow was cancelled", dry_run)
    if workflow.status is None:
        error_type, message = NO_WORKFLOW, GONE
    elif workflow.incompatible:
        error_type, message = WORKFLOW_INCOMPATIBLE, f"{INCOMPATIBLE} ({workflow.why})"
    else:
        error_type = CLOSED_AS[workflow.status]
        why = f" ({workflow.why})" if workflow.why else ""
        message = ENDED.format(how=HOW[error_type], why=why)
    if dry_run:
        return _did(outcome, "failed", message, dry_run)
    failure = Failure(run_id, _open_stage(run_id), error_type, message)
    ended = transitions.run_end(run_id=run_id, status=Run.Status.FAILED, failure=failure)
    run.refresh_from_db(fields=["status"])
    action = run.status if ended or run.status == Run.Status.PASSED else "left"
    failed = ended and run.status == Run.Status.FAILED
    return _did(outcome, action, message if failed else "", dry_run)


def _did(outcome: Outcome, action: str, detail: str, dry_run: bool) -> Outcome:
    action = f"would be {action}" if dry_run else action
    return Outcome(outcome.run_id, outcome.was, outcome.workflow, action, detail)


def _open_stage(run_id: str) -> str:
    """The stage the run was in: the one running (or held for approval), if any."""
    stage = (
        Stage.objects.filter(
            run_id=run_id, status__in=[StageStatus.RUNNING, StageStatus.AWAITING_APPROVAL]
        )
        .order_by("position")
        .values_list("name", flat=True)
        .first()
    )
    return stage or ""


def _cancel(run: Run) -> None:
    """What the workflow does on a cancel, done for it: the run ended ``cancelled``, and
    whatever CreatePullRequest wrote taken back."""
    started_pr = run.stages.filter(name=Stage.Name.CREATE_PULL_REQUEST).exclude(
        status=StageStatus.PENDING
    )
    reached_pr = started_pr.exists()
    transitions.run_end(run_id=str(run.pk), status=Run.Status.CANCELLED)
    if reached_pr:
        try:
            pull_requests.pull_request_discard(str(run.pk))
        except Exception as exc:  # the run is cancelled; the host keeps what it has
            logger.warning("could not take back run %s's pull request: %s", run.pk, exc)
