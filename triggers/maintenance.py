"""Starting maintenance runs that nobody typed the inputs of: "Check tests now" in admin and
the repository's schedule. Both go through ``run_create`` like the API, the webhook and the
shell; what they add is the question whether a maintenance run can do anything here."""

from __future__ import annotations

import hashlib
import logging

from amtp_site import audit
from amtp_site.errors import AmtpError
from repositories.models import MaintenanceEvery, Repository
from runs.errors import RunInputInvalid
from runs.models import Run
from runs.services import run_create

log = logging.getLogger(__name__)

NO_TARGET = (
    "{repo} has no preview URL: a maintenance run re-verifies the tests against the running "
    "app, so set one under Verification first"
)
NO_TEST_DIR = "{repo} has no test directory: set one under Run defaults first"
STILL_GOING = "maintenance run {run_id} of {repo} is still {status}: nothing started"
SCHEDULE_OFF = "repository {repository_id} has no maintenance schedule (any more): nothing started"
NOT_STARTED = "not started: {problem}"
STARTED_NOW = "Started by “Check tests now”"
STARTED_BY_SCHEDULE = "Started by the repository's maintenance schedule ({key})"
OPEN = (Run.Status.PENDING, Run.Status.RUNNING)
MAX_KEY = 190  # with "schedule:", within runs.request_key


def maintenance_problem(repository: Repository) -> str | None:
    """Why a maintenance run of ``repository`` (with no target URL of its own) could do
    nothing, or None."""
    if not repository.preview_url:
        return NO_TARGET.format(repo=repository.full_name)
    if not repository.test_dir.strip("/"):
        return NO_TEST_DIR.format(repo=repository.full_name)
    return None


def open_maintenance_run(repository: Repository) -> Run | None:
    """The repository's maintenance run that is still pending or running, if any."""
    going = Run.objects.filter(repository=repository, kind=Run.Kind.MAINTENANCE, status__in=OPEN)
    return going.order_by("created_at").first()


def maintenance_start_now(*, repository: Repository, actor: audit.Actor) -> Run:
    """Admin's "Check tests now": a maintenance run of the default branch, recorded in the
    audit trail; or the one still going (``created`` False), so a second click starts no
    second run. RunInputInvalid when a run could do nothing."""
    if problem := maintenance_problem(repository):
        raise RunInputInvalid("repository", problem)
    if (going := open_maintenance_run(repository)) is not None:
        going.created = False
        return going
    run = run_create(
        repository=repository,
        kind=Run.Kind.MAINTENANCE,
        trigger=Run.Trigger.FORM,
        requested_by=actor.name,
        requester=f"user:{actor.user.pk}",
    )
    audit.record(actor, run, STARTED_NOW, flag=audit.ADDITION)
    return run


def scheduled_maintenance_start(*, repository_id: int, key: str) -> str:
    """The schedule's firing ``key`` (its workflow id) as a maintenance run: its id, or why
    none was started (the repository gone or off, nothing to verify against, its previous
    maintenance run still going, the run refused). A repeat of ``key`` returns the same run."""
    if len(key) > MAX_KEY:  # a long task queue name: the run's request key has 200 characters
        key = hashlib.sha256(key.encode()).hexdigest()
    repository = Repository.objects.filter(pk=repository_id).first()
    if repository is None or repository.maintenance_every == MaintenanceEvery.OFF:
        return SCHEDULE_OFF.format(repository_id=repository_id)
    earlier = Run.objects.filter(request_key=f"schedule:{key}").first()
    if earlier is not None:  # this firing's own run, from an attempt that was not recorded
        return str(earlier.pk)
    if (going := open_maintenance_run(repository)) is not None:
        return STILL_GOING.format(run_id=going.pk, repo=repository.full_name, status=going.status)
    if problem := maintenance_problem(repository):
        return NOT_STARTED.format(problem=problem)
    try:
        run = run_create(
            repository=repository,
            kind=Run.Kind.MAINTENANCE,
            trigger=Run.Trigger.SCHEDULE,
            requested_by="schedule",
            request_key=key,
            request_scope="schedule",
        )
    except AmtpError as exc:  # refused for good (e.g. the preview address): said, not retried
        if exc.retryable:
            raise
        log.warning("scheduled maintenance of %s refused: %s", repository.full_name, exc)
        return NOT_STARTED.format(problem=str(exc))
    if run.created:
        audit.record(None, run, STARTED_BY_SCHEDULE.format(key=key))  # logged: nobody acted
    return str(run.pk)
