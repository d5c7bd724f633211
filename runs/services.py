"""Write paths every surface calls (admin, launch form, API, webhooks, CLI)."""

from __future__ import annotations

import uuid
from contextlib import nullcontext

from django.conf import settings
from django.db import IntegrityError, transaction

import schemas
from amtp_site import audit, metrics, rows, temporal, tracing
from repositories.models import Repository
from repositories.services import allow_host_problems, normalised_allow_hosts
from repositories.targets import target_address_problem, target_url_problem
from runs import slots, transitions
from runs.errors import IdempotencyKeyReused, OrchestratorUnavailable, RunError, RunInputInvalid
from runs.models import Run, RunStart

RUN_FINISHED = "run {run_id} already finished ({status}); nothing to cancel"
CANCEL_RECORDED = "Cancellation requested"
RAN_AGAIN = "Run again as run {run_id}"
AGAIN_OF = "Started as a run again of run {run_id}"
PREVIEW_URL_REFUSED = "the repository's preview URL, used when none is given: {problem}"
KIND_INVALID = "must be one of: {kinds}"
MAINTENANCE_NO_TARGET = (
    "{repo} has no preview URL: a maintenance run re-verifies the tests against the running "
    "app, so give target_url or set the repository's preview URL"
)
IDEMPOTENCY_KEY_REUSED = (
    "Idempotency-Key {key!r} was used for a different request (run {run_id}); use a new key"
)


def run_create(
    *,
    repository: Repository,
    ref: str = "",
    depth_level: str = "",
    target_framework: str = "",
    base_branch: str = "",
    target_url: str = "",
    allowed_hosts: list[str] | tuple[str, ...] = (),
    trigger: str = Run.Trigger.API,
    requested_by: str = "",
    requester: str = "",
    request_key: str | None = None,
    request_scope: str = "",
    admit_at_submit: bool = False,
    kind: str = Run.Kind.GENERATION,
    pull_number: int | None = None,
    held: bool = False,
) -> Run:
    """Validate, insert the run ``pending`` with its stages and its place in ``run_starts``:
    run_worker's dispatcher starts its workflow (id = run id; run_starts_dispatch). So a run is
    accepted whether or not Temporal can be reached right now, and nothing is lost when not.

    ``requester`` identifies who asked for the four-eyes rule (``user:<id>``, or
    ``token:<id>`` for a service token; ``requested_by`` is only how they are shown).
    ``request_key`` (unique within ``request_scope``, e.g. one API caller or GitHub's delivery
    ids) makes the request idempotent: a repeat returns the run the first one created, and a
    repeat with other inputs raises IdempotencyKeyReused. ``run.created`` tells which it was.
    ``kind``: a generation run (new tests), a maintenance run (the repository's tests kept
    green) or a check run (a pull request's preview, ``pull_number``, checked).
    ``admit_at_submit`` takes the new run's place in its repository's window in the
    transaction that inserts it, and refuses the run (RateLimitExceeded, the API's 429) when the
    window is full; otherwise the workflow admits the run. ``target_url`` (where VerifyTests
    runs the tests) overrides the repository's preview URL; one the verifier would refuse
    (repositories.targets) raises RunInputInvalid naming ``target_url``. ``allowed_hosts``:
    loopback or private hosts this run alone may reach (RunInputInvalid naming
    ``allowed_hosts`` for an entry the repository's list would refuse too).
    """
    if problem := target_url_problem(target_url):
        raise RunInputInvalid("target_url", problem)
    allowed_hosts = run_allow_hosts(allowed_hosts)
    if kind not in Run.Kind.values:
        raise RunInputInvalid("kind", KIND_INVALID.format(kinds=", ".join(Run.Kind.values)))
    if kind == Run.Kind.MAINTENANCE and not (target_url or repository.preview_url):
        raise RunInputInvalid("target_url", MAINTENANCE_NO_TARGET.format(repo=repository.full_name))
    asked = {
        "kind": kind,
        "ref": ref,
        "depth_level": depth_level,
        "target_framework": target_framework,
        "base_branch": base_branch,
        "target_url": target_url,
    }
    key = f"{request_scope}:{request_key}" if request_key and request_scope else request_key
    existing = Run.objects.filter(request_key=key).first() if key else None
    if existing is not None:
        return _replay(existing, repository, asked, request_key)
    target_address_check(repository, target_url, allowed_hosts)
    try:
        run = _insert(
            repository,
            admit=admit_at_submit,
            trigger=trigger,
            requested_by=requested_by[:200],
            requester=requester,
            request_key=key or None,
            traceparent=tracing.traceparent(),
            pull_number=pull_number,
            held=held,
            allowed_hosts=allowed_hosts,
            **asked,
        )
    except IntegrityError:
        if key:  # a concurrent duplicate request won the race
            return _replay(Run.objects.get(request_key=key), repository, asked, request_key)
        raise
    run.created = True
    metrics.run_accepted(trigger)
    return run


def run_allow_hosts(entries) -> list[str]:
    """Per-run allowed hosts, checked and normalised by the repository's own rule."""
    problems = allow_host_problems(list(entries))
    if problems:
        raise RunInputInvalid("allowed_hosts", "; ".join(problems))
    return normalised_allow_hosts(list(entries))


def target_address_check(
    repository: Repository, target_url: str, run_hosts: list[str] | tuple[str, ...] = ()
) -> None:
    """RunInputInvalid when the tests could not reach the run's target (``target_url``, else
    the repository's preview URL) through the verifier's proxy: a private address that the
    repository's allowed hosts (and the run's own) do not name. Asked again at submit, as DNS
    and lists change."""
    url = target_url or repository.preview_url
    if problem := target_address_problem(url, [*repository.allowed_hosts, *run_hosts]):
        raise RunInputInvalid(
            "target_url", problem if target_url else PREVIEW_URL_REFUSED.format(problem=problem)
        )


def _insert(
    repository: Repository,
    *,
    ref: str,
    depth_level: str,
    target_framework: str,
    base_branch: str,
    target_url: str,
    admit: bool = False,
    **fields,
) -> Run:
    """Fill in the repository's defaults, validate, insert the run with its stages in one
    statement. With ``admit``, the run first takes its place in the window (a refusal inserts
    nothing), and the statement records it; a run with a request key is inserted first, in
    the transaction that admits it."""
    run_id = uuid.uuid4()
    ref = ref or repository.default_branch
    depth_level = depth_level or repository.default_depth_level
    schemas.validate(
        "repo_crawler/input",
        {
            "run_id": str(run_id),
            "repo_full_name": repository.full_name,
            "ref": ref,
            "depth_level": depth_level,
        },
    )
    run = Run(
        run_id=run_id,
        repository=repository,
        repo_full_name=repository.full_name,
        ref=ref,
        depth_level=depth_level,
        target_framework=target_framework or repository.default_framework,
        base_branch=base_branch or repository.default_branch,
        target_url=target_url,
        **fields,
    )
    # What the answer shows of a run inserted just now: these stages, nothing else yet
    # (RunDetailOut reads nothing more for it).
    run.inserted_stages = transitions.new_stages(run)
    new_rows = [run, *run.inserted_stages, _start_row(run)]
    keyed = admit and run.request_key is not None
    with transaction.atomic() if keyed else nullcontext():
        if keyed:  # a concurrent duplicate waits on the unique key here and fails: no window place
            rows.insert(*new_rows)
            new_rows = []
        if admit and slots.window_admit(run):
            try:
                rows.insert(*new_rows, slots.admission(run))
            except BaseException:
                slots.window_forget(run)  # the run was not inserted: its place goes back
                raise
        elif new_rows:
            rows.insert(*new_rows)
    return run


def _replay(run: Run, repository: Repository, asked: dict, request_key: str) -> Run:
    """The run an earlier request with the same key created, if it asked for the same
    (inputs left empty take the repository's defaults, so they match any)."""
    differs = any(value and str(getattr(run, name)) != str(value) for name, value in asked.items())
    if differs or run.repository_id != repository.pk:
        raise IdempotencyKeyReused(
            IDEMPOTENCY_KEY_REUSED.format(key=request_key, run_id=run.run_id),
            run_id=str(run.run_id),
        )
    run.created = False
    return run


def run_enqueue(run: Run) -> None:
    """Queue a pending run that has no ``run_starts`` row to be started (reconcile_runs,
    a webhook redelivery)."""
    if run.status == Run.Status.PENDING:
        RunStart.objects.bulk_create([_start_row(run)], ignore_conflicts=True)


def _start_row(run: Run) -> RunStart:
    """The run's place in ``run_starts``: its workflow goes to the task queue of now."""
    return RunStart(run=run, task_queue=settings.TEMPORAL_TASK_QUEUE)


def run_cancel(*, run: Run, actor: audit.Actor | None = None) -> None:
    """Ask Temporal to cancel; the workflow marks the run and its open stages ``cancelled``.
    ``actor`` (a person, through admin or the API) goes into the audit trail."""
    run.refresh_from_db()
    if run.is_terminal:
        raise RunError(RUN_FINISHED.format(run_id=run.run_id, status=run.status))
    # Not started yet: taken off the outbox, it never will be. (A dispatcher starting it
    # holds the row: this waits for it, finds nothing, and cancels the workflow it started.)
    if RunStart.objects.filter(run_id=run.run_id).delete()[0]:
        transitions.run_end(run_id=str(run.run_id), status=Run.Status.CANCELLED)
        audit.record(actor, run, CANCEL_RECORDED)
        return

    async def cancel(client):
        await client.get_workflow_handle(str(run.run_id)).cancel()

    try:
        temporal.call(cancel)
    except Exception as exc:  # no workflow (never started): cancel the row directly
        if run.status != Run.Status.PENDING:
            raise OrchestratorUnavailable(f"could not cancel run {run.run_id}: {exc}") from exc
        transitions.run_end(run_id=str(run.run_id), status=Run.Status.CANCELLED)
    audit.record(actor, run, CANCEL_RECORDED)


def run_again(
    *,
    run: Run,
    requested_by: str = "",
    requester: str = "",
    trigger: str = Run.Trigger.FORM,
    actor: audit.Actor | None = None,
) -> Run:
    """A new run with the same inputs (recovery after StaleBaseBranch, or a re-check); both
    runs' histories say so.

    A webhook run's ref is the pushed SHA and its base the pushed branch: run again, it runs
    the branch as it is now (its PR is based on the branch's head, so the crawl must be too)."""
    webhook = run.trigger == Run.Trigger.WEBHOOK
    new = run_create(
        repository=run.repository,
        ref=run.base_branch if webhook else run.ref,
        depth_level=run.depth_level,
        target_framework=run.target_framework,
        base_branch=run.base_branch,
        target_url=run.target_url,
        allowed_hosts=run.allowed_hosts,
        trigger=trigger,
        requested_by=requested_by,
        requester=requester,
    )
    audit.record(actor, run, RAN_AGAIN.format(run_id=new.pk))
    audit.record(actor, new, AGAIN_OF.format(run_id=run.pk), flag=audit.ADDITION)
    return new
