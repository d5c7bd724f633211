"""Run and stage transitions, each a compare-and-swap in PostgreSQL.

Every write names the states it may leave, so a late or replayed activity cannot move a
finished run backwards (e.g. an agent child finishing after the run was cancelled).
"""

from __future__ import annotations

import logging

from django.db import connection, transaction
from django.db.models.functions import Now

import schemas
from approvals.models import Approval
from notifications import services as notifications
from repositories.models import NotifyEvent
from runs.models import Artifact, ArtifactKind, Run, RunStatus, Stage, StageStatus
from runs.stages import Failure
from schemas.errors import SchemaValidationError

logger = logging.getLogger(__name__)
REPORT_SCHEMA = "artifacts/failure_report"
OPEN_RUN = [RunStatus.PENDING, RunStatus.RUNNING]
OPEN_STAGE = [StageStatus.PENDING, StageStatus.RUNNING, StageStatus.AWAITING_APPROVAL]


def new_stages(run: Run) -> list[Stage]:
    """A new run's stages, not yet inserted."""
    names = Stage.OF_KIND[run.kind]
    return [Stage(run=run, name=name, position=i) for i, name in enumerate(names)]


def create_stages(run: Run) -> list[Stage]:
    return Stage.objects.bulk_create(new_stages(run), ignore_conflicts=True)


def _write(sql: str, params: list) -> int:
    """A precompiled write of the worker's hot path (the ORM's UPDATE compiled each time cost
    more CPU than PostgreSQL spends on it); the rows it changed."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def mark_running(run_id: str) -> bool:
    return bool(
        _write(
            "UPDATE runs SET status = %s, started_at = STATEMENT_TIMESTAMP() "
            "WHERE run_id = %s AND status = %s",
            [RunStatus.RUNNING, str(run_id), RunStatus.PENDING],
        )
    )


def mark_passed(run_id: str) -> bool:
    return bool(
        Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
            status=RunStatus.PASSED, finished_at=Now()
        )
    )


# One statement: the stage begun (if it and its run are open), or found passed in a run still
# open. The ORM's form (an UPDATE with a subquery, then an EXISTS) cost a fifth of a worker's
# database CPU; every stage of every run starts with it.
_STAGE_BEGIN = """
WITH begun AS (
    UPDATE stages SET status = 'running', attempts = stages.attempts + 1,
           started_at = COALESCE(stages.started_at, STATEMENT_TIMESTAMP()),
           error_type = '', error_message = ''
    FROM runs
    WHERE stages.run_id = %(run_id)s AND stages.name = %(name)s
      AND stages.status = ANY(%(open_stage)s)
      AND runs.run_id = stages.run_id AND runs.status = ANY(%(open_run)s)
    RETURNING 1
)
SELECT EXISTS (SELECT FROM begun) OR EXISTS (
    SELECT FROM stages JOIN runs ON runs.run_id = stages.run_id
    WHERE stages.run_id = %(run_id)s AND stages.name = %(name)s
      AND stages.status = 'passed' AND runs.status = ANY(%(open_run)s)
)
"""


def stage_begin(run_id: str, name: str) -> bool:
    """Stage → running, one more attempt. False when the run is already finished.

    True, unchanged, for a stage that already passed in a run still open: an attempt whose
    result Temporal never recorded (its process died, or Temporal was down, after the stage
    passed) is retried, and the caller returns the artifact that attempt persisted."""
    params = {
        "run_id": str(run_id),
        "name": name,
        "open_stage": [str(s) for s in OPEN_STAGE],
        "open_run": [str(s) for s in OPEN_RUN],
    }
    with connection.cursor() as cursor:
        cursor.execute(_STAGE_BEGIN, params)
        return cursor.fetchone()[0]


def stage_pass(run_id: str, name: str) -> None:
    _write(
        "UPDATE stages SET status = %s, finished_at = STATEMENT_TIMESTAMP() "
        "WHERE run_id = %s AND name = %s AND status = %s",
        [StageStatus.PASSED, str(run_id), name, StageStatus.RUNNING],
    )


def stage_close(
    run_id: str, name: str, status: str, *, note: str = "", error_type: str = "", message: str = ""
) -> None:
    """A running stage → ``status`` with a note (why it was skipped, what it found) or an error
    the run goes on after (VerifyTests that could not verify, PR opened unverified)."""
    Stage.objects.filter(run_id=run_id, name=name, status=StageStatus.RUNNING).update(
        status=status,
        finished_at=Now(),
        note=note[:10_000],
        error_type=error_type,
        error_message=message[:10_000],
    )


def stage_error(run_id: str, name: str, error_type: str, message: str) -> None:
    """Record an attempt's error while Temporal decides whether to retry (stage stays open)."""
    stages_error([run_id], name, error_type, message)


def stages_error(run_ids: list, name: str, error_type: str, message: str) -> None:
    """stage_error for several runs at once (the runs waiting for Temporal to start them)."""
    Stage.objects.filter(run_id__in=run_ids, name=name, status__in=OPEN_STAGE).update(
        error_type=error_type, error_message=message[:10_000]
    )


def _close_open_stages(run_id: str, status: str) -> None:
    Stage.objects.filter(run_id=run_id, status__in=OPEN_STAGE).update(
        status=status, finished_at=Now()
    )


def _every_stage_passed(run_id: str) -> bool:
    stages = Stage.objects.filter(run_id=run_id)
    return stages.exists() and not stages.exclude(status=StageStatus.PASSED).exists()


@transaction.atomic
def mark_failed(failure: Failure) -> bool:
    """Run → failed, its stage failed, the open ones skipped, a ``failure_report``. A run
    whose stages all passed (its PR is open) is not failed by a late bookkeeping error: it is
    marked passed."""
    if _every_stage_passed(failure.run_id):
        mark_passed(failure.run_id)
        return False
    changed = Run.objects.filter(pk=failure.run_id, status__in=OPEN_RUN).update(
        status=RunStatus.FAILED,
        finished_at=Now(),
        error_type=failure.error_type,
        error_message=failure.message[:10_000],
    )
    if not changed:
        return False
    if failure.stage:
        Stage.objects.filter(run_id=failure.run_id, name=failure.stage).update(
            status=StageStatus.FAILED,
            finished_at=Now(),
            error_type=failure.error_type,
            error_message=failure.message[:10_000],
        )
    _close_open_stages(failure.run_id, StageStatus.SKIPPED)
    Approval.objects.filter(run_id=failure.run_id).close(f"run failed: {failure.error_type}")
    _report(failure)
    notifications.notify(failure.run_id, NotifyEvent.RUN_FAILED, reason=failure.message)
    return True


def _report(failure: Failure) -> None:
    """The ``failure_report`` artifact. One the contract refuses (a StaleBaseBranch whose
    observed head is not a SHA) is left out, not allowed to roll the run's end back: the run
    row and its stage still carry the error type and message."""
    if failure.error_type == "StaleBaseBranch":
        keys = ("base_branch", "observed_head", "expected_parent")
        content = {"error": "StaleBaseBranch", **{k: failure.details.get(k) for k in keys}}
    else:
        content = {"error": failure.error_type, "message": failure.message, "stage": failure.stage}
    try:
        content = schemas.validate(REPORT_SCHEMA, content)
    except SchemaValidationError as exc:
        logger.warning("run %s: no failure_report (%s)", failure.run_id, exc)
        return
    Artifact.objects.get_or_create(
        run_id=failure.run_id,
        kind=ArtifactKind.FAILURE_REPORT,
        defaults={"schema_id": schemas.schema_id(REPORT_SCHEMA), "content": content},
    )


@transaction.atomic
def mark_cancelled(run_id: str) -> bool:
    changed = Run.objects.filter(pk=run_id, status__in=OPEN_RUN).update(
        status=RunStatus.CANCELLED, finished_at=Now()
    )
    _close_open_stages(run_id, StageStatus.CANCELLED)
    Approval.objects.filter(run_id=run_id).close("run cancelled")
    return bool(changed)


def stage_await_approval(run_id: str) -> Stage:
    """CreatePullRequest → awaiting_approval (locked row, for the approval written with it)."""
    stage = Stage.objects.select_for_update().get(
        run_id=run_id, name=Stage.Name.CREATE_PULL_REQUEST
    )
    Stage.objects.filter(pk=stage.pk).update(status=StageStatus.AWAITING_APPROVAL)
    return stage
