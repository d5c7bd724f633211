"""The four stages as plain service functions; the Temporal activities are thin wrappers.

Each agent stage is idempotent per spec 003: its key is
``sha256(run_id ":" activity ":" canonical_json(input))``; when ``activity_idempotency`` (or
the run's artifact of that kind) already holds the result, it is returned and the LLM is not
called again. Each stage loads its upstream artifact from PostgreSQL and returns only the new
``artifact_id``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.db import transaction

import schemas
from agents.runner import AgentResult
from amtp_site.canonical import idempotency_key
from amtp_site.errors import RunNotActive
from repositories.hosts import host_for
from runs import lifecycle
from runs.models import ActivityIdempotency, Artifact, ArtifactKind, Run, Stage
from runs.pull_requests import head_branch_for, pull_request_create


def _begin(run_id: str, stage: str) -> Run:
    if not lifecycle.stage_begin(run_id, stage):
        raise RunNotActive(f"run {run_id} is no longer active; {stage} was not started")
    return Run.objects.select_related("repository").get(pk=run_id)


def _reuse(key: str, run: Run, kind: str) -> str | None:
    done = ActivityIdempotency.objects.filter(idem_key=key).first()
    if done is not None:
        return done.result["artifact_id"]
    existing = Artifact.objects.filter(run=run, kind=kind).first()
    return str(existing.artifact_id) if existing else None


@transaction.atomic
def _persist(run: Run, kind: str, schema: str, result: AgentResult, key: str, activity: str) -> str:
    artifact, _ = Artifact.objects.get_or_create(
        run=run,
        kind=kind,
        defaults={
            "schema_id": schemas.schema_id(schema),
            "content": result.output,
            "meta": {**result.meta, "idempotency_key": key},
        },
    )
    ActivityIdempotency.objects.bulk_create(
        [
            ActivityIdempotency(
                idem_key=key,
                run=run,
                activity_name=activity,
                result={"artifact_id": str(artifact.artifact_id)},
            )
        ],
        ignore_conflicts=True,
    )
    return str(artifact.artifact_id)


def _fault_once_after_persist(stage: str) -> None:
    """Fault injection for the crash-recovery tests, never set in a real deployment:
    ``AMTP_FAULT_ONCE=<stage>:<crash|hang>:<marker file>`` makes this agent process die (or
    hang until it is killed) once, right after the stage's artifact is persisted and before
    the activity completes. The marker file records that it happened."""
    stage_name, action, marker = (os.environ.get("AMTP_FAULT_ONCE", "").split(":", 2) + ["", ""])[
        :3
    ]
    if stage_name != stage or Path(marker).exists():
        return
    Path(marker).write_text(str(os.getpid()))
    if action == "crash":
        os._exit(70)
    time.sleep(3600)


def _finish(run: Run, stage: str, artifact_id: str) -> str:
    _fault_once_after_persist(stage)
    lifecycle.stage_pass(str(run.run_id), stage)
    return artifact_id


def crawl_repo(run_id: str) -> str:
    from agents.service import run_repo_crawler

    run = _begin(run_id, Stage.Name.CRAWL_REPO)
    if not run.commit_sha:
        host = host_for(run.repository)
        run.commit_sha = host.resolve_ref(run.ref)
        run.base_sha = (
            run.commit_sha if run.ref == run.base_branch else host.resolve_ref(run.base_branch)
        )
        Run.objects.filter(pk=run.pk, commit_sha="").update(
            commit_sha=run.commit_sha, base_sha=run.base_sha
        )
        run.refresh_from_db()
    key = idempotency_key(run_id, "CrawlRepo", {"ref": run.ref, "depth_level": run.depth_level})
    kind = ArtifactKind.REPO_CRAWLER_OUTPUT
    if (found := _reuse(key, run, kind)) is not None:
        return _finish(run, Stage.Name.CRAWL_REPO, found)
    payload = schemas.validate(
        "repo_crawler/input",
        {
            "run_id": run_id,
            "repo_full_name": run.repo_full_name,
            "ref": run.ref,
            "depth_level": run.depth_level,
        },
    )
    result = run_repo_crawler(payload, commit_sha=run.commit_sha)
    artifact_id = _persist(run, kind, "repo_crawler/output", result, key, "CrawlRepo")
    return _finish(run, Stage.Name.CRAWL_REPO, artifact_id)


def generate_test_cases(run_id: str) -> str:
    from agents.service import run_test_case_generator

    run = _begin(run_id, Stage.Name.GENERATE_TEST_CASES)
    upstream = Artifact.objects.get(run=run, kind=ArtifactKind.REPO_CRAWLER_OUTPUT)
    key = idempotency_key(
        run_id,
        "GenerateTestCases",
        {"upstream": str(upstream.artifact_id), "depth_level": run.depth_level},
    )
    kind = ArtifactKind.TEST_CASE_GENERATOR_OUTPUT
    if (found := _reuse(key, run, kind)) is not None:
        return _finish(run, Stage.Name.GENERATE_TEST_CASES, found)
    payload = {**upstream.content, "depth_level": run.depth_level}
    result = run_test_case_generator(payload, upstream_artifact_id=str(upstream.artifact_id))
    artifact_id = _persist(
        run, kind, "test_case_generator/output", result, key, "GenerateTestCases"
    )
    return _finish(run, Stage.Name.GENERATE_TEST_CASES, artifact_id)


def generate_test_code(run_id: str) -> str:
    from agents.service import run_test_engineer

    run = _begin(run_id, Stage.Name.GENERATE_TEST_CODE)
    upstream = Artifact.objects.get(run=run, kind=ArtifactKind.TEST_CASE_GENERATOR_OUTPUT)
    key = idempotency_key(
        run_id,
        "GenerateTestCode",
        {"upstream": str(upstream.artifact_id), "target_framework": run.target_framework},
    )
    kind = ArtifactKind.TEST_ENGINEER_OUTPUT
    if (found := _reuse(key, run, kind)) is not None:
        return _finish(run, Stage.Name.GENERATE_TEST_CODE, found)
    payload = {
        "run_id": run_id,
        "target_framework": run.target_framework,
        "test_cases": upstream.content["test_cases"],
        "coverage_notes": upstream.content["coverage_notes"],
    }
    result = run_test_engineer(
        payload,
        upstream_artifact_id=str(upstream.artifact_id),
        base_branch=run.base_branch,
        head_branch=head_branch_for(run),
        test_dir=run.repository.test_dir,
    )
    artifact_id = _persist(run, kind, "test_engineer/output", result, key, "GenerateTestCode")
    return _finish(run, Stage.Name.GENERATE_TEST_CODE, artifact_id)


def create_pull_request(run_id: str) -> str:
    run = _begin(run_id, Stage.Name.CREATE_PULL_REQUEST)
    code = Artifact.objects.get(run=run, kind=ArtifactKind.TEST_ENGINEER_OUTPUT).content
    key = idempotency_key(
        run_id, "CreatePullRequest", {"files": sorted(f["path"] for f in code["files"])}
    )
    artifact = pull_request_create(
        run=run, files=code["files"], title=code["pr_title"], body=code["pr_body"]
    )
    ActivityIdempotency.objects.bulk_create(
        [
            ActivityIdempotency(
                idem_key=key,
                run=run,
                activity_name="CreatePullRequest",
                result={"artifact_id": str(artifact.artifact_id)},
            )
        ],
        ignore_conflicts=True,
    )
    return _finish(run, Stage.Name.CREATE_PULL_REQUEST, str(artifact.artifact_id))
