"""CreatePullRequest (spec 003): serialised per repository, idempotent, typed failures.

The head branch comes from the run id, never from model output, so every attempt of one run
targets the same branch: a retry after a crash, or after the ``pr_lock`` was lost to a Valkey
restart, finds the branch/PR of the earlier attempt and adopts it instead of opening a second.
"""

from __future__ import annotations

from django.db import transaction

import schemas
from amtp_site import valkey
from repositories.hosts import host_for
from runs.models import Artifact, ArtifactKind, Run

PR_SCHEMA = "artifacts/pull_request"


def head_branch_for(run: Run) -> str:
    return f"amtp/run-{run.run_id}"


def pull_request_create(*, run: Run, files: list[dict], title: str, body: str) -> Artifact:
    """Open (or adopt) the run's pull request and record the ``pull_request`` artifact.

    Raises RepoPrLockContended (retryable), StaleBaseBranch, BranchProtectionViolation,
    GitHubForbidden and the host's other typed errors.
    """
    existing = Artifact.objects.filter(run=run, kind=ArtifactKind.PULL_REQUEST).first()
    if existing is not None:
        return existing
    head_branch = head_branch_for(run)
    with valkey.pr_lock(run.repo_full_name, str(run.run_id)):
        result = host_for(run.repository).open_pull_request(
            base_branch=run.base_branch,
            expected_base_sha=run.base_sha or run.commit_sha,
            head_branch=head_branch,
            files={f["path"]: f["contents"] for f in files},
            title=title,
            body=body,
        )
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
            "files": sorted(f["path"] for f in files),
            "adopted": result.adopted,
        },
    )
    with transaction.atomic():
        artifact, _ = Artifact.objects.get_or_create(
            run=run,
            kind=ArtifactKind.PULL_REQUEST,
            defaults={"schema_id": schemas.schema_id(PR_SCHEMA), "content": content},
        )
        Run.objects.filter(pk=run.pk).update(
            pr_number=result.number, pr_url=result.url, head_branch=result.head_branch
        )
    return artifact
