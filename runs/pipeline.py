"""The stages as plain service functions; the Temporal activities are thin wrappers.

An agent stage is two steps the worker runs around its agent process: ``agent_step`` (begin,
load the upstream, build the agent's call) and ``agent_store`` (store the answer). Each agent
stage is idempotent: its key is
``sha256(run_id ":" activity ":" canonical_json(input))``; when ``activity_idempotency`` (or
the run's artifact of that kind) already holds the result, it is returned and the LLM is not
called again. Each stage loads its upstream artifact from PostgreSQL and returns only the new
``artifact_id``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

from django.db import connection

import schemas
from agents.runner import AgentResult
from amtp_site import rows
from amtp_site.canonical import idempotency_key
from repositories.errors import BranchProtectionViolation, GitHubForbidden
from repositories.hosts import host_for
from repositories.login import recipe_of
from runs import artifacts, selectors, transitions
from runs.checks import pull_request_check_report
from runs.errors import RunNotActive
from runs.models import Artifact, ArtifactKind, Run, StageStatus
from runs.pr_harness import harness_of, without_workflow, workflow_refused
from runs.pull_requests import head_branch_for, pull_request_create
from runs.stages import (
    BOOT_APP,
    CRAWL_REPO,
    CREATE_PULL_REQUEST,
    EXPLORE_APP,
    GENERATE_TEST_CASES,
    GENERATE_TEST_CODE,
    STAGE_OF,
    VERIFY_TESTS,
)
from verification.boot import service as boot
from verification.errors import VerificationError
from verification.exploration.service import (
    APP_MAP_SCHEMA,
    app_map,
    app_view,
    exploration_note,
    exploration_skip_reason,
)
from verification.login import signup_of
from verification.service import REPORT_SCHEMA, target_url_of, verification_report
from verification.summary import pull_request_contents, totals_note

UNVERIFIED_NOTE = "the pull request is opened anyway, marked unverified"
UNEXPLORED_NOTE = "the tests are written without a map of the app (the repository opens PRs anyway)"
REPORT_NOT_STORED = "run {run_id} is being cancelled; its {kind} was not stored"


def _begin(run_id: str, activity: str, run: Run | None = None) -> Run:
    """The stage begun, and the run (``run``, when the caller has just loaded it)."""
    stage = STAGE_OF[activity]
    if not transitions.stage_begin(run_id, stage):
        raise RunNotActive(f"run {run_id} is no longer active; {stage} was not started")
    return run or selectors.run_with_repository(run_id)


def _reuse(run: Run, kind: str, *fields: str) -> tuple | None:
    """The artifact an earlier attempt persisted (``artifact_id`` and ``fields``), or None.
    A run has one artifact of each kind, and the attempt's ``activity_idempotency`` row, written
    with it, names that one: looking it up by its key too would find nothing more. One
    precompiled statement: every stage asks, and nearly always finds nothing."""
    columns = ", ".join(["artifact_id", *fields])  # the callers' own field names
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM artifacts WHERE run_id = %s AND kind = %s LIMIT 1",
            [str(run.run_id), kind],
        )
        row = cursor.fetchone()
    return None if row is None else rows.converted(Artifact, ["artifact_id", *fields], row)


def _persist(
    run: Run, kind: str, schema: str, result: AgentResult, key: str, activity: str
) -> Artifact:
    """The stage's artifact (or an earlier attempt's) and the attempt's idempotency row."""
    meta = {**result.meta, "idempotency_key": key}
    return artifacts.store(run, kind, schemas.schema_id(schema), result.output, meta, key, activity)


def _finish(run: Run, activity: str, artifact_id: str) -> str:
    transitions.stage_pass(str(run.run_id), STAGE_OF[activity])
    return artifact_id


@dataclass(frozen=True)
class AgentStep:
    """An agent stage begun: ``call`` is what its agent process runs (an ``agents.service``
    function and plain data, picklable: the process needs no database), the rest is how the
    worker stores what it answers."""

    run: Run
    activity: str
    key: str
    call: Callable[[], AgentResult]


def agent_step(activity: str, run_id: str) -> AgentStep | str:
    """Begin an agent stage: the artifact id if an earlier attempt stored it already (the
    stage passes; the LLM is not called again), else what the agent process is to run."""
    run = _begin(run_id, activity)
    kind, _schema, prepare = AGENTS[activity]
    if done := _reuse(run, kind):
        return _finish(run, activity, str(done[0]))
    key_input, call = prepare(run)
    return AgentStep(run, activity, idempotency_key(run_id, activity, key_input), call)


def agent_store(step: AgentStep, result: AgentResult) -> str:
    """Store the agent's validated output as the stage's artifact; the stage passes."""
    kind, schema, _prepare = AGENTS[step.activity]
    artifact = _persist(step.run, kind, schema, result, step.key, step.activity)
    return _finish(step.run, step.activity, str(artifact.artifact_id))


def _resolve_commits(run: Run) -> None:
    """Pin the ref (and the base branch's head) on the first attempt; retries keep them."""
    host = host_for(run.repository)
    run.commit_sha = host.resolve_ref(run.ref)
    run.base_sha = (
        run.commit_sha if run.ref == run.base_branch else host.resolve_ref(run.base_branch)
    )
    pinned = Run.objects.filter(pk=run.pk, commit_sha="").update(
        commit_sha=run.commit_sha, base_sha=run.base_sha
    )
    if not pinned:  # an earlier attempt pinned them first: keep its values
        run.refresh_from_db()


def _crawl_repo(run: Run) -> tuple[dict, Callable[[], AgentResult]]:
    if not run.commit_sha:
        _resolve_commits(run)
    payload = {
        "run_id": str(run.run_id),
        "repo_full_name": run.repo_full_name,
        "ref": run.ref,
        "depth_level": run.depth_level,
    }
    payload = schemas.validate("repo_crawler/input", payload)
    from agents.service import run_repo_crawler  # the agent stack: not the web's to import

    call = functools.partial(
        run_repo_crawler, payload, commit_sha=run.commit_sha, repository=run.repository
    )
    return {"ref": run.ref, "depth_level": run.depth_level}, call


def _generate_test_cases(run: Run) -> tuple[dict, Callable[[], AgentResult]]:
    from agents.service import run_test_case_generator

    upstream = Artifact.objects.get(run=run, kind=ArtifactKind.REPO_CRAWLER_OUTPUT)
    app_map_id, view = _app_map_of(run, upstream.content)
    call = functools.partial(
        run_test_case_generator,
        {**upstream.content, "depth_level": run.depth_level},
        upstream_artifact_id=str(upstream.artifact_id),
        **view,
    )
    key_input = {"upstream": str(upstream.artifact_id), "depth_level": run.depth_level}
    return {**key_input, **app_map_id}, call


def _app_map_of(run: Run, crawl: dict | None = None) -> tuple[dict, dict]:
    """The run's app map for an agent's envelope (``{"app_map": view}``, the pages the
    ``crawl`` does not cover first) and for its key (``{"app_map": artifact_id}``); both
    empty when the run did not explore its app."""
    found = (
        Artifact.objects.filter(run=run, kind=ArtifactKind.APP_MAP)
        .values_list("artifact_id", "content")
        .first()
    )
    if found is None:
        return {}, {}
    return {"app_map": str(found[0])}, {"app_map": app_view(found[1], crawl)}


def _generate_test_code(run: Run) -> tuple[dict, Callable[[], AgentResult]]:
    from agents.service import run_test_engineer

    upstream = Artifact.objects.get(run=run, kind=ArtifactKind.TEST_CASE_GENERATOR_OUTPUT)
    payload = {
        "run_id": str(run.run_id),
        "target_framework": run.target_framework,
        "test_cases": upstream.content["test_cases"],
        "coverage_notes": upstream.content["coverage_notes"],
    }
    app_map_id, view = _app_map_of(run)
    call = functools.partial(
        run_test_engineer,
        payload,
        upstream_artifact_id=str(upstream.artifact_id),
        base_branch=run.base_branch,
        head_branch=head_branch_for(run),
        test_dir=run.repository.test_dir,
        **view,
    )
    key_input = {"upstream": str(upstream.artifact_id), "target_framework": run.target_framework}
    return {**key_input, **app_map_id}, call


# activity -> (artifact kind, output schema, what its agent process is to run)
AGENTS = {
    CRAWL_REPO: (ArtifactKind.REPO_CRAWLER_OUTPUT, "repo_crawler/output", _crawl_repo),
    GENERATE_TEST_CASES: (
        ArtifactKind.TEST_CASE_GENERATOR_OUTPUT,
        "test_case_generator/output",
        _generate_test_cases,
    ),
    GENERATE_TEST_CODE: (
        ArtifactKind.TEST_ENGINEER_OUTPUT,
        "test_engineer/output",
        _generate_test_code,
    ),
}


def verify_tests(
    run_id: str,
    run: Run | None = None,
    *,
    sessions: Executor | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> str:
    """Run the generated tests against the run's target URL, heal (each healing session in
    a process of ``sessions``, the agent pool), quarantine, report. The stage passes
    (verified), is skipped (no target URL, no device: the note says why) or, when the
    repository opens the PR anyway, fails with the reason while the run goes on. Once
    ``stop()`` (the run's cancellation was requested), the report is not stored."""
    run = run or selectors.run_with_repository(run_id)
    # The report of an earlier attempt, or of GenerateTestCode's store (nothing to run), is
    # the stage's: it is closed as that report says (if that attempt did not get so far).
    if done := _reuse(run, ArtifactKind.VERIFICATION_REPORT, "content"):
        artifact_id, report = str(done[0]), done[1]
    else:
        _begin(run_id, VERIFY_TESTS, run)
        code = Artifact.objects.get(run=run, kind=ArtifactKind.TEST_ENGINEER_OUTPUT)
        key_input = {"upstream": str(code.artifact_id), "target_url": target_url_of(run)}
        key = idempotency_key(run_id, VERIFY_TESTS, key_input)
        with boot.live_app(run, stop) as app:  # a test that crashes it: restarted, set aside
            content, meta = verification_report(run, code.content, sessions, app=app)
        if content["status"] == "skipped" and (why := boot.not_booted_reason(run)):
            content["reason"] = why  # the PR's first line says why it has no live app
        if stop():
            raise RunNotActive(REPORT_NOT_STORED.format(run_id=run_id, kind="verification report"))
        result = AgentResult(output=content, meta=meta)
        artifact = _persist(
            run, ArtifactKind.VERIFICATION_REPORT, REPORT_SCHEMA, result, key, VERIFY_TESTS
        )
        artifact_id, report = str(artifact.artifact_id), artifact.content
    stage = STAGE_OF[VERIFY_TESTS]
    if report["status"] == "verified":
        transitions.stage_close(run_id, stage, StageStatus.PASSED, note=totals_note(report))
    elif report["status"] == "unverified":
        error_type, _, message = report["reason"].partition(": ")
        transitions.stage_close(
            run_id,
            stage,
            StageStatus.FAILED,
            error_type=error_type,
            message=message,
            note=UNVERIFIED_NOTE,
        )
    else:
        transitions.stage_close(run_id, stage, StageStatus.SKIPPED, note=report["reason"])
    return artifact_id


def skip_boot(run_id: str) -> bool:
    """Whether BootApp is skipped (the run has a target URL or a preview, a mobile app): the
    one place that decides it, just after CrawlRepo, closing the stage with the reason."""
    run = selectors.run_with_repository(run_id)
    reason = boot.boot_skip_reason(run)
    if reason and transitions.stage_begin(run_id, STAGE_OF[BOOT_APP]):
        transitions.stage_close(run_id, STAGE_OF[BOOT_APP], StageStatus.SKIPPED, note=reason)
    return bool(reason)


def boot_app(run_id: str, *, stop: Callable[[], bool] = lambda: False) -> str:
    """Boot the run's app from its recipe once, stop it, store the ``app_boot`` artifact. The
    stage passes (booted), is skipped (no recipe: the tests are written from the source, as
    for a run without a target), or fails: the run fails, unless the repository opens pull
    requests unverified; then the run goes on without a live app, and says why."""
    run = _begin(run_id, BOOT_APP)
    stage = STAGE_OF[BOOT_APP]
    if done := _reuse(run, ArtifactKind.APP_BOOT, "content"):
        content = done[1]
    else:
        try:
            content = schemas.validate(boot.APP_BOOT_SCHEMA, boot.boot_content(run))
        except VerificationError as exc:
            if not run.repository.open_pr_unverified:
                raise
            content = {"status": boot.FAILED, "error": exc.to_dict()}
        if stop():
            raise RunNotActive(REPORT_NOT_STORED.format(run_id=run_id, kind="app boot"))
        key = idempotency_key(run_id, BOOT_APP, {"commit": run.commit_sha})
        result = AgentResult(output=content, meta={"pid": os.getpid()})
        schema = boot.APP_BOOT_SCHEMA
        _persist(run, ArtifactKind.APP_BOOT, schema, result, key, BOOT_APP)
    if content["status"] == boot.BOOTED:
        transitions.stage_close(run_id, stage, StageStatus.PASSED, note=boot.booted_note(content))
    else:
        error, message = content["error"]["error"], content["error"]["message"]
        status = StageStatus.SKIPPED if content["status"] == boot.NO_RECIPE else StageStatus.FAILED
        transitions.stage_close(
            run_id, stage, status, error_type=error, message=message, note=boot.NO_APP_NOTE
        )
    return ""


def skip_exploration(run_id: str) -> bool:
    """Whether ExploreApp is skipped: the one place that decides it, just after CrawlRepo.
    Skipped (no target URL, a mobile app), the stage is closed as such here, with the reason."""
    run = selectors.run_with_repository(run_id)
    reason = exploration_skip_reason(run)
    if reason and transitions.stage_begin(run_id, STAGE_OF[EXPLORE_APP]):
        transitions.stage_close(run_id, STAGE_OF[EXPLORE_APP], StageStatus.SKIPPED, note=reason)
    return bool(reason)


def explore_app(run_id: str, *, stop: Callable[[], bool] = lambda: False) -> str:
    """Visit the run's target app in the sandboxed browser and store the ``app_map``; the
    stage passes with a note of what was found. An app that cannot be explored (unreachable,
    no browser, no sandbox) fails the run, unless the repository opens the PR anyway: then
    the stage fails with the reason and the tests are written without a map (""). Once
    ``stop()``, the map is not stored."""
    run = _begin(run_id, EXPLORE_APP)
    stage = STAGE_OF[EXPLORE_APP]
    if reason := exploration_skip_reason(run):  # the app it was to boot did not boot
        transitions.stage_close(run_id, stage, StageStatus.SKIPPED, note=reason)
        return ""
    if done := _reuse(run, ArtifactKind.APP_MAP, "content"):
        artifact_id, content = str(done[0]), done[1]
    else:
        try:
            with boot.live_app(run, stop) as app:  # a crash: restarted, recorded in the map
                content = app_map(run, app)
        except VerificationError as exc:
            if not run.repository.open_pr_unverified:
                raise
            error_type = type(exc).__name__
            transitions.stage_close(
                run_id,
                stage,
                StageStatus.FAILED,
                error_type=error_type,
                message=exc.message,
                note=UNEXPLORED_NOTE,
            )
            return ""
        if stop():
            raise RunNotActive(REPORT_NOT_STORED.format(run_id=run_id, kind="app map"))
        key_input = {"target_url": target_url_of(run), "commit": run.commit_sha}
        key = idempotency_key(run_id, EXPLORE_APP, key_input)
        result = AgentResult(output=content, meta={"pid": os.getpid()})
        artifact = _persist(run, ArtifactKind.APP_MAP, APP_MAP_SCHEMA, result, key, EXPLORE_APP)
        artifact_id = str(artifact.artifact_id)
    transitions.stage_close(run_id, stage, StageStatus.PASSED, note=exploration_note(content))
    return artifact_id


def skip_verification(run_id: str, run: Run | None = None) -> bool:
    """Whether VerifyTests is skipped: the one place that decides it, just after
    GenerateTestCode. With nothing to run (web tests, no target URL) the stage is closed as
    skipped with the same report, here, without an agent process (asked again: True,
    unchanged). False when there is something to run (a target URL, or Maestro flows to
    list): the workflow then runs the VerifyTests activity."""
    run = run or selectors.run_with_repository(run_id)
    if target_url_of(run) or boot.boots_app(run) or run.target_framework != "playwright":
        return False
    verify_tests(run_id, run)
    return True


def create_pull_request(run_id: str, *, stop: Callable[[], bool] = lambda: False) -> str:
    """Open the PR; ``stop()`` says the run's cancellation was requested (see pull_requests).
    Then its check run, when the repository takes them (runs.checks). The stage passes; the
    run's end is its workflow's to write."""
    run = _begin(run_id, CREATE_PULL_REQUEST)
    kinds = (ArtifactKind.TEST_ENGINEER_OUTPUT, ArtifactKind.VERIFICATION_REPORT)
    found = Artifact.objects.filter(run=run, kind__in=kinds).order_by()  # no join on runs
    content = dict(found.values_list("kind", "content"))
    if kinds[0] not in content:
        raise Artifact.DoesNotExist(f"run {run_id} has no {kinds[0]} artifact")
    code, report = content[kinds[0]], content.get(kinds[1])
    coverage = selectors.coverage(run)
    # No credentials: the PR names their variables only, or signs up an account of its own.
    login = recipe_of(run.repository) or signup_of(selectors.app_map(run))
    files, title, body = pull_request_contents(
        code, report, run.repository.test_dir, coverage, login, harness_of(run)
    )
    try:
        artifact = pull_request_create(run=run, files=files, title=title, body=body, stop=stop)
    except (GitHubForbidden, BranchProtectionViolation) as exc:
        if not workflow_refused(exc, files):
            raise
        files, body = without_workflow(files, body)  # the tests still go, without their CI
        artifact = pull_request_create(run=run, files=files, title=title, body=body, stop=stop)
    if note := pull_request_check_report(run, artifact.content["head_sha"], report):
        transitions.stage_close(
            run_id, STAGE_OF[CREATE_PULL_REQUEST], StageStatus.PASSED, note=note
        )
    return _finish(run, CREATE_PULL_REQUEST, str(artifact.artifact_id))
