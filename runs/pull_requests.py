"""CreatePullRequest: serialised per repository, idempotent, typed failures.

The pull request is a draft with the repository's labels unless its settings say otherwise, so
CI that runs on pull requests does not run model-written code before a person has read it.

The head branch comes from the run id, never from model output, so every attempt of one run
targets the same branch: a retry after a crash, or after the ``pr_lock`` was lost to a Valkey
restart, finds the branch/PR of the earlier attempt and adopts it instead of opening a second.

Cancellation: right before writing and again before recording, the run must still be open
and its cancellation not requested (``stop``: Temporal's, carried by heartbeats); otherwise
nothing is written, or what was just written is taken back (PR closed, head branch deleted),
and RunNotActive is raised. The workflow takes back whatever is left once the activity has
stopped (``pull_request_discard``), so a cancelled run never leaves a PR or a head branch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.db import transaction

import schemas
from amtp_site import valkey
from amtp_site.canonical import idempotency_key
from notifications import services as notifications
from repositories.hosts import PullRequestResult, RepositoryHost, host_for
from repositories.models import NotifyEvent
from runs import artifacts
from runs.errors import RunNotActive
from runs.models import Artifact, ArtifactKind, Run
from runs.stages import CREATE_PULL_REQUEST
from runs.transitions import OPEN_RUN

PR_SCHEMA = "artifacts/pull_request"
NOT_WRITTEN = "run {run_id} is {status}: its pull request is not written"


def head_branch_for(run: Run) -> str:
    return f"amtp/run-{run.run_id}"


def _never() -> bool:
    return False


def _go_on(run: Run, stop: Callable[[], bool], *, lock: bool = False) -> None:
    """Raise RunNotActive unless the run is still open and not being cancelled."""
    rows = Run.objects.filter(pk=run.pk)
    status = (rows.select_for_update() if lock else rows).values_list("status", flat=True)
    status = "being cancelled" if stop() else status.first()
    if status not in OPEN_RUN:
        raise RunNotActive(NOT_WRITTEN.format(run_id=run.run_id, status=status))


@dataclass(frozen=True)
class EarlierPull:
    """An earlier run's pull request that a run updates rather than opening a second one (a
    maintenance run's): its head branch, and the body it is given then."""

    head_branch: str
    body: str


def pull_request_create(
    *,
    run: Run,
    files: list[dict],
    title: str,
    body: str,
    stop: Callable[[], bool] = _never,
    earlier: Callable[[], EarlierPull | None] | None = None,
) -> Artifact:
    """Open (or adopt) the run's pull request and record the ``pull_request`` artifact (with
    the attempt's idempotency key: the files it writes). With ``earlier`` (asked under the
    repository's PR lock, so two runs never both open one), the files go onto that pull
    request while it is open (``updated`` in the artifact) and a new one is opened otherwise.

    Raises RepoPrLockContended (retryable), StaleBaseBranch, BranchProtectionViolation,
    GitHubForbidden and the host's other typed errors; RunNotActive when the run stopped.
    """
    paths = sorted(f["path"] for f in files)
    key = idempotency_key(str(run.run_id), CREATE_PULL_REQUEST, {"files": paths})
    existing = Artifact.objects.filter(run=run, kind=ArtifactKind.PULL_REQUEST).order_by().first()
    if existing is not None:
        artifacts.record(run, key, CREATE_PULL_REQUEST, str(existing.artifact_id))
        # An attempt killed between recording and releasing leaves the lock held by this run:
        # give it back now rather than make the repository's next run wait out its TTL. Best
        # effort: with Valkey away the lock is gone or expires by itself.
        with contextlib.suppress(redis.RedisError):
            valkey.release_pr_lock(run.repo_full_name, str(run.run_id))
        return existing
    host = host_for(run.repository)
    head_branch = head_branch_for(run)
    with valkey.pr_lock(run.repo_full_name, str(run.run_id)):
        _go_on(run, stop)
        found = earlier() if earlier else None
        result = _update_earlier(run, host, files, title, found)
        body = found.body if result else body  # what the pull request carries now
        result = result or host.open_pull_request(
            base_branch=run.base_branch,
            expected_base_sha=run.base_sha or run.commit_sha,
            head_branch=head_branch,
            files={f["path"]: f["contents"] for f in files},
            title=title,
            body=body,
            draft=run.repository.draft_pull_requests,
            labels=run.repository.pull_request_labels,
        )
        try:
            return _record(run, result, paths, key, stop, title=title, body=body)
        except RunNotActive:
            if not result.updated:  # an earlier run's pull request is not this run's to close
                host.discard_pull_request(head_branch=head_branch, base_branch=run.base_branch)
            raise


def _update_earlier(run, host, files, title, earlier: EarlierPull | None):
    if earlier is None:
        return None
    return host.update_pull_request(
        head_branch=earlier.head_branch,
        base_branch=run.base_branch,
        files={f["path"]: f["contents"] for f in files},
        title=title,
        body=earlier.body,
    )


def _record(
    run: Run,
    result: PullRequestResult,
    paths: list[str],
    key: str,
    stop: Callable[[], bool],
    *,
    title: str,
    body: str,
) -> Artifact:
    content = schemas.validate(
        PR_SCHEMA,
        {
            "run_id": str(run.run_id),
            "host": run.repository.host,
            "repo_full_name": run.repo_full_name,
            "number": result.number,
            "url": result.url,
            "head_branch": result.head_branch,
            "head_sha": result.head_sha,
            "base_branch": result.base_branch,
            "base_sha": result.base_sha,
            "files": paths,
            "adopted": result.adopted,
            "updated": result.updated,
            # The run page shows them for every host (a local one has no web page for it).
            "title": title,
            "body": body,
        },
    )
    with transaction.atomic():
        _go_on(run, stop, lock=True)  # the run row stays locked: no cancel in between
        kind, schema_id = ArtifactKind.PULL_REQUEST, schemas.schema_id(PR_SCHEMA)
        artifact = artifacts.store(run, kind, schema_id, content, {}, key, CREATE_PULL_REQUEST)
        Run.objects.filter(pk=run.pk).update(
            pr_number=result.number, pr_url=result.url, head_branch=result.head_branch
        )
        if not result.updated:  # the pull request's watchers hear of it from the host
            notifications.notify(str(run.pk), NotifyEvent.PR_OPENED)
    return artifact


def pull_request_discard(run_id: str) -> bool:
    """After a run was cancelled: close its pull request and delete its head branch, if
    CreatePullRequest wrote them (a run in any other state is left alone)."""
    run = Run.objects.select_related("repository").get(pk=run_id)
    if run.status != Run.Status.CANCELLED:
        return False
    host: RepositoryHost = host_for(run.repository)
    discarded = host.discard_pull_request(
        head_branch=head_branch_for(run), base_branch=run.base_branch
    )
    Run.objects.filter(pk=run.pk).update(pr_number=None, pr_url="", head_branch="")
    return discarded
