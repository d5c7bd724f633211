"""The one writer of a run's status and of its stages' statuses.

Every allowed transition is here, each one precompiled SQL statement that names the states it
may leave (a compare-and-swap), with the statuses as parameters taken from the models' choices.
A late or replayed write (an agent child finishing after the run was cancelled, an activity
retried after its result was lost) finds its row already moved and changes nothing.

Run:   pending → running (``run_running``); pending|running → failed, cancelled and
       running → passed (``run_end``). Terminal is final.
Stage: pending|running|awaiting_approval → running (``stage_begin``, while the run is open);
       running → passed|skipped (``stage_pass``, ``stage_close``); running → failed while the
       run goes on (``stage_close``: a repository that opens pull requests unverified);
       pending|running → awaiting_approval (``stage_await_approval``, the stage the workflow
       names); open → failed|skipped|cancelled when the run ends (failed: the failure's stage,
       and in a failed run any whose last attempt raised).

``run_end`` is the only way a run ends, for the workflow's EndRun, a cancel before the
workflow started (``runs.services``) and ``reconcile_runs`` alike. The transaction that
moves the run also closes its stages and its pending approval, writes its failure report,
queues its notification and adds it to the rollups (``amtp_rollup_runs``, ``amtp_health_runs``); after it commits, the call that ended the run counts it in the metrics.
Every call (the first, a retry, a loser of a race) then gives back the run's concurrency place
and PR lock, both compare-and-delete in Valkey: done once, however often it is asked.
"""

from __future__ import annotations

import logging

import redis
from django.db import connection, transaction

import schemas
from amtp_site import metrics, valkey
from approvals.models import Approval
from notifications import services as notifications
from repositories.models import NotifyEvent
from runs.models import Artifact, ArtifactKind, Run, RunStatus, Stage, StageStatus
from runs.stages import Failure
from schemas.errors import SchemaValidationError

logger = logging.getLogger(__name__)
REPORT_SCHEMA = "artifacts/failure_report"
OPEN_RUN = [str(RunStatus.PENDING), str(RunStatus.RUNNING)]
OPEN_STAGE = [
    str(StageStatus.PENDING),
    str(StageStatus.RUNNING),
    str(StageStatus.AWAITING_APPROVAL),
]
# Where a run may end from, by how it ends: only a running run passes.
ENDS_FROM = {
    RunStatus.PASSED: [str(RunStatus.RUNNING)],
    RunStatus.FAILED: OPEN_RUN,
    RunStatus.CANCELLED: OPEN_RUN,
}
# What a run's open stages become when it ends.
OPEN_STAGES_END = {
    RunStatus.PASSED: StageStatus.SKIPPED,
    RunStatus.FAILED: StageStatus.SKIPPED,
    RunStatus.CANCELLED: StageStatus.CANCELLED,
}
MAX_TEXT = 10_000


def new_stages(run: Run) -> list[Stage]:
    """A new run's stages (``pending``), not yet inserted."""
    names = Stage.OF_KIND[run.kind]
    return [Stage(run=run, name=name, position=i) for i, name in enumerate(names)]


def create_stages(run: Run) -> list[Stage]:
    return Stage.objects.bulk_create(new_stages(run), ignore_conflicts=True)


def _write(sql: str, params: dict) -> int:
    """One statement (precompiled: on the worker's hot path the ORM compiling an UPDATE cost
    more CPU than PostgreSQL spends running it); the rows it changed."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _fetch(sql: str, params: dict):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


# --- runs ----------------------------------------------------------------------------------

_RUN_RUNNING = """
UPDATE runs SET status = %(to)s, started_at = STATEMENT_TIMESTAMP()
WHERE run_id = %(run_id)s AND status = %(from)s
"""


def run_running(run_id: str) -> bool:
    """pending → running (the workflow's first step); False if it was not pending."""
    params = {"run_id": str(run_id), "to": RunStatus.RUNNING, "from": RunStatus.PENDING}
    return bool(_write(_RUN_RUNNING, params))


_RUN_END = """
UPDATE runs SET status = %(to)s, finished_at = STATEMENT_TIMESTAMP(),
       error_type = COALESCE(%(error_type)s, error_type),
       error_message = COALESCE(%(message)s, error_message)
WHERE run_id = %(run_id)s AND status = ANY(%(from)s)
RETURNING trigger
"""
_EVERY_STAGE_PASSED = """
SELECT count(*) > 0 AND bool_and(status = %(passed)s) FROM stages WHERE run_id = %(run_id)s
"""
_STAGE_FAIL = """
UPDATE stages SET status = %(to)s, finished_at = STATEMENT_TIMESTAMP(),
       error_type = %(error_type)s, error_message = %(message)s
WHERE run_id = %(run_id)s AND name = %(name)s AND status = ANY(%(from)s)
"""
# A failed run's open stage whose last attempt raised (its error is on it, stage_error) failed
# too: a check run whose report of its tests' failure failed as well.
_STAGES_CLOSE = """
UPDATE stages SET status = CASE WHEN %(failed_run)s AND error_type <> '' THEN %(failed)s
                                ELSE %(to)s END,
       finished_at = STATEMENT_TIMESTAMP()
WHERE run_id = %(run_id)s AND status = ANY(%(from)s)
"""
_ROLLUP = """
SELECT amtp_rollup_runs(%(run_ids)s::uuid[]), amtp_health_runs_or_warn(%(run_ids)s::uuid[])
"""


def run_end(*, run_id: str, status: str, failure: Failure | None = None) -> bool:
    """End the run ``status``: passed; failed with ``failure`` (its stage failed, a failure
    report); cancelled. A failure of a run whose stages all passed (its PR is open) is a late
    bookkeeping error: the run passes. True if this call ended the run (and did the once-only
    steps, see the module); every call gives back the run's slot and PR lock."""
    if status not in ENDS_FROM or (status == RunStatus.FAILED) != (failure is not None):
        raise ValueError(f"a run cannot end {status!r} (failure: {failure!r})")
    run_id = str(run_id)
    with transaction.atomic():
        trigger, status = _end(run_id, status, failure) or (None, status)
    if trigger is not None:
        _count(run_id, trigger, status)
    give_back(Run.objects.filter(pk=run_id).values_list("repo_full_name", flat=True).get(), run_id)
    return trigger is not None


def _end(run_id: str, status: str, failure: Failure | None) -> tuple[str, str] | None:
    """The run ended, with everything that commits with it; (trigger, status), or None when
    the run had already left the states ``status`` may be reached from."""
    params = {"run_id": run_id, "passed": StageStatus.PASSED}
    if failure is not None and _fetch(_EVERY_STAGE_PASSED, params)[0]:
        status, failure = RunStatus.PASSED, None
    error_type = failure.error_type if failure else None
    message = failure.message[:MAX_TEXT] if failure else None
    ended = _fetch(
        _RUN_END,
        {
            **params,
            "to": status,
            "from": ENDS_FROM[status],
            "error_type": error_type,
            "message": message,
        },
    )
    if ended is None:
        return None
    if failure is not None and failure.stage:
        _write(
            _STAGE_FAIL,
            {
                **params,
                "name": failure.stage,
                "to": StageStatus.FAILED,
                "from": OPEN_STAGE,
                "error_type": error_type,
                "message": message,
            },
        )
    _write(
        _STAGES_CLOSE,
        {
            **params,
            "to": OPEN_STAGES_END[status],
            "from": OPEN_STAGE,
            "failed_run": status == RunStatus.FAILED,
            "failed": StageStatus.FAILED,
        },
    )
    Approval.objects.filter(run_id=run_id).close(_why(status, failure))
    if failure is not None:
        _report(failure)
        notifications.notify(run_id, NotifyEvent.RUN_FAILED, reason=failure.message)
    roll_up([run_id])
    return ended[0], status


def _why(status: str, failure: Failure | None) -> str:
    return f"run failed: {failure.error_type}" if failure else f"run {status}"


def roll_up(run_ids: list) -> None:
    """Ended runs into the daily rollups and ``run_health``; ``run_end`` does it for each run
    it ends, in that transaction (so once). A report the health table cannot read never stops
    a run from ending: it is left out, with a warning in PostgreSQL's log."""
    _write(_ROLLUP, {"run_ids": [str(run_id) for run_id in run_ids]})


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


def _count(run_id: str, trigger: str, status: str) -> None:
    """The run's end and its stages' durations in the metrics (once: by the call that ended it)."""
    stages = Stage.objects.filter(run_id=run_id).values_list(
        "name", "status", "started_at", "finished_at"
    )
    metrics.run_finished(trigger, status, stages)


def give_back(repo: str, run_id: str) -> None:
    """The run's concurrency place and, if it holds it, ``repo``'s PR lock: what an ended run
    still holds in Valkey (compare-and-delete: once, however often asked). Valkey being down
    only delays this: the next run that needs a place frees those whose run PostgreSQL says
    has ended (runs.slots, through this), and the lock expires."""
    try:
        valkey.concurrency_decr(repo, run_id)
        valkey.release_pr_lock(repo, run_id)
    except redis.RedisError as exc:
        logger.warning("could not give back run %s's slot or PR lock: %s", run_id, exc)


# --- stages --------------------------------------------------------------------------------

# One statement: the stage begun (if it and its run are open), or found passed in a run still
# open. The ORM's form (an UPDATE with a subquery, then an EXISTS) cost a fifth of a worker's
# database CPU; every stage of every run starts with it.
_STAGE_BEGIN = """
WITH begun AS (
    UPDATE stages SET status = %(running)s, attempts = stages.attempts + 1,
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
      AND stages.status = %(passed)s AND runs.status = ANY(%(open_run)s)
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
        "running": StageStatus.RUNNING,
        "passed": StageStatus.PASSED,
        "open_stage": OPEN_STAGE,
        "open_run": OPEN_RUN,
    }
    return _fetch(_STAGE_BEGIN, params)[0]


_STAGE_PASS = """
UPDATE stages SET status = %(to)s, finished_at = STATEMENT_TIMESTAMP()
WHERE run_id = %(run_id)s AND name = %(name)s AND status = %(from)s
"""


def stage_pass(run_id: str, name: str) -> None:
    params = {"run_id": str(run_id), "name": name}
    _write(_STAGE_PASS, {**params, "to": StageStatus.PASSED, "from": StageStatus.RUNNING})


_STAGE_CLOSE = """
UPDATE stages SET status = %(to)s, finished_at = STATEMENT_TIMESTAMP(), note = %(note)s,
       error_type = %(error_type)s, error_message = %(message)s
WHERE run_id = %(run_id)s AND name = %(name)s AND status = %(from)s
"""
STAGE_CLOSES_TO = (StageStatus.PASSED, StageStatus.SKIPPED, StageStatus.FAILED)


def stage_close(
    run_id: str, name: str, status: str, *, note: str = "", error_type: str = "", message: str = ""
) -> None:
    """A running stage → ``status`` (passed, skipped, or failed with an error the run goes on
    after: BootApp, ExploreApp or VerifyTests that could not reach the app when the repository
    opens pull requests unverified) with a note (why it was skipped, what it found)."""
    if status not in STAGE_CLOSES_TO:
        raise ValueError(f"a stage cannot close {status!r}")
    params = {
        "run_id": str(run_id),
        "name": name,
        "to": status,
        "from": StageStatus.RUNNING,
        "note": note[:MAX_TEXT],
        "error_type": error_type,
        "message": message[:MAX_TEXT],
    }
    _write(_STAGE_CLOSE, params)


_STAGES_ERROR = """
UPDATE stages SET error_type = %(error_type)s, error_message = %(message)s
WHERE run_id = ANY(%(run_ids)s::uuid[]) AND name = %(name)s AND status = ANY(%(open)s)
"""


def stage_error(run_id: str, name: str, error_type: str, message: str) -> None:
    """Record an attempt's error while Temporal decides whether to retry (stage stays open)."""
    stages_error([run_id], name, error_type, message)


def stages_error(run_ids: list, name: str, error_type: str, message: str) -> None:
    """stage_error for several runs at once (the runs waiting for Temporal to start them)."""
    params = {
        "run_ids": [str(run_id) for run_id in run_ids],
        "name": name,
        "error_type": error_type,
        "message": message[:MAX_TEXT],
        "open": OPEN_STAGE,
    }
    _write(_STAGES_ERROR, params)


_STAGE_NOTE = """
UPDATE stages SET note = %(note)s WHERE run_id = %(run_id)s AND name = %(name)s
"""


def stage_note(run_id: str, name: str, note: str) -> None:
    """What a stage's page says beside its status (its status unchanged): a held stage's note
    that its hold could not be shown on GitHub, which the run's end leaves as it is."""
    _write(_STAGE_NOTE, {"run_id": str(run_id), "name": name, "note": note[:MAX_TEXT]})


_STAGE_AWAIT = """
UPDATE stages SET status = %(to)s WHERE stage_id = %(stage_id)s AND status = ANY(%(from)s)
"""


def stage_await_approval(run_id: str, name: str) -> Stage:
    """The held stage ``name`` → awaiting_approval, if still open (locked row, for the approval
    written with it). The workflow names it: CreatePullRequest's, or a check run's
    verify_tests (held before any of a fork's code runs). A name that is not one of the run's
    stages is refused (ValueError): nothing would wait, and a decision would resume nothing."""
    stage = Stage.objects.select_for_update().filter(run_id=run_id, name=name).first()
    if stage is None:
        raise ValueError(f"run {run_id} has no stage {name!r} to hold for an approval")
    _write(
        _STAGE_AWAIT,
        {"stage_id": stage.pk, "to": StageStatus.AWAITING_APPROVAL, "from": OPEN_STAGE},
    )
    return stage
