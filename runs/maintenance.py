"""Maintenance and check runs: the Playwright tests a repository already holds, re-verified
against a live app (``verification``), then a maintenance pull request or a check run.

Which tests: the ``*.spec.ts`` files under the repository's test directory that AMTP wrote (a
comment naming AMTP in their first lines: every file AMTP writes opens with one), or every
spec there when the repository says so (``maintain_all_specs``). A maintenance run heals and
quarantines under the rules of VerifyTests (a heal never weakens a test; a test whose page
answers 404 now is quarantined as "page removed: confirm the deletion") and opens a pull
request only when a file changed; a check run heals nothing and changes no file.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor

from agents.runner import AgentResult
from amtp_site.canonical import idempotency_key
from repositories.hosts import host_for
from runs import selectors, transitions
from runs.errors import RunNotActive
from runs.models import Artifact, ArtifactKind, Run, StageStatus
from runs.pipeline import REPORT_NOT_STORED, _persist, _reuse
from runs.pull_requests import EarlierPull, pull_request_create
from runs.stages import CHECK, OPEN_MAINTENANCE_PR, REVERIFY_TESTS, STAGE_OF
from verification.amtp_header import is_amtp_file
from verification.service import REPORT_SCHEMA, target_url_of, verification_report
from verification.summary import pr_section, totals_note

MAX_FILES = 200
NO_TESTS = "no tests to re-verify: {test_dir}/ holds no Playwright spec {whose}"
NOTHING_CHANGED = "nothing changed: every test passed as it is, so no pull request"
TITLE = "Keep the end-to-end tests green: {healed} healed, {quarantined} quarantined"
PR_OPENED = "opened pull request #{number} ({files} file(s))"
PR_UPDATED = (
    "updated pull request #{number}, the open maintenance pull request, with {files} file(s)"
)
UPDATED = (
    "\n---\nUpdated by maintenance run {run_id}: the report above is that run's; files it "
    "did not change are as the earlier run left them.\n"
)
INTRO = (
    "AMTP re-verified the end-to-end tests of `{test_dir}/` at {sha} against {url}. Healed "
    "tests changed only locators, waits or navigation, never what they expect; quarantined "
    "tests say why above their `test.fixme`. A quarantined test whose page is gone says "
    '"page removed: confirm the deletion": delete it if the page went on purpose.\n'
)


def held_tests(repository, commit_sha: str, *, every: bool = False) -> list[dict]:
    """The specs under the repository's test directory at ``commit_sha`` that are kept: AMTP's
    own, or ``every`` one (at most MAX_FILES, in path order)."""
    host = host_for(repository)
    prefix = repository.test_dir.strip("/") + "/"
    paths = sorted(
        e.path
        for e in host.tree(commit_sha)
        if e.path.startswith(prefix) and e.path.endswith(".spec.ts")
    )
    files = []
    for path in paths[:MAX_FILES]:
        text = host.read_file(commit_sha, path).decode("utf-8", "replace")
        if every or is_amtp_file(text):
            files.append({"path": path, "contents": text})
    return files


def changed_files(report: dict) -> list[dict]:
    """The files a heal or a quarantine rewrote (what a maintenance PR carries)."""
    touched = {t["file"] for t in report["tests"] if t["status"] in ("healed", "quarantined")}
    return [f for f in report["files"] if f["path"] in touched]


def _pin(run: Run) -> None:
    if run.commit_sha:
        return
    host = host_for(run.repository)
    run.commit_sha = host.resolve_ref(run.ref)
    run.base_sha = host.resolve_ref(run.base_branch) if run.kind != CHECK else run.commit_sha
    Run.objects.filter(pk=run.pk, commit_sha="").update(
        commit_sha=run.commit_sha, base_sha=run.base_sha
    )
    run.refresh_from_db()


def reverify_tests(
    run_id: str, *, sessions: Executor | None = None, stop: Callable[[], bool] = lambda: False
) -> tuple[str, bool]:
    """(the verification report's id, whether a pull request is to be opened). The stage
    closes as its report says; a maintenance run that changed nothing closes its PR stage as
    skipped here (decided once). No tests at all: both skipped, ("", False)."""
    run = selectors.run_with_repository(run_id)
    stage = STAGE_OF[REVERIFY_TESTS]
    if done := _reuse(run, ArtifactKind.VERIFICATION_REPORT, "content"):
        artifact_id, report = str(done[0]), done[1]
    else:
        if not transitions.stage_begin(run_id, stage):
            raise RunNotActive(f"run {run_id} is no longer active; {stage} was not started")
        _pin(run)
        repository = run.repository
        files = held_tests(repository, run.commit_sha, every=repository.maintain_all_specs)
        if not files:
            whose = "" if repository.maintain_all_specs else "that AMTP wrote"
            note = NO_TESTS.format(test_dir=repository.test_dir.strip("/"), whose=whose).strip()
            transitions.stage_close(run_id, stage, StageStatus.SKIPPED, note=note)
            return "", False
        code = {"framework": "playwright", "files": files}
        content, meta = verification_report(run, code, sessions, check=run.kind == CHECK)
        if stop():
            raise RunNotActive(REPORT_NOT_STORED.format(run_id=run_id, kind="verification report"))
        key_input = {"commit": run.commit_sha, "target_url": target_url_of(run)}
        key = idempotency_key(run_id, REVERIFY_TESTS, key_input)
        artifact = _persist(
            run,
            ArtifactKind.VERIFICATION_REPORT,
            REPORT_SCHEMA,
            AgentResult(output=content, meta=meta),
            key,
            REVERIFY_TESTS,
        )
        artifact_id, report = str(artifact.artifact_id), artifact.content
    if report["status"] == "verified":
        transitions.stage_close(run_id, stage, StageStatus.PASSED, note=totals_note(report))
    else:
        transitions.stage_close(run_id, stage, StageStatus.SKIPPED, note=report["reason"])
    if run.kind == CHECK:
        return artifact_id, False
    changed = bool(changed_files(report))
    if not changed:
        pr_stage = STAGE_OF[OPEN_MAINTENANCE_PR]
        if transitions.stage_begin(run_id, pr_stage):
            transitions.stage_close(run_id, pr_stage, StageStatus.SKIPPED, note=NOTHING_CHANGED)
    return artifact_id, changed


def earlier_maintenance_pull(run: Run, body: str) -> EarlierPull | None:
    """The pull request the repository's latest earlier maintenance run opened or updated:
    the one to update while it is open (the host says whether it is)."""
    earlier = (
        Run.objects.filter(repository_id=run.repository_id, kind=Run.Kind.MAINTENANCE)
        .exclude(pk=run.pk)
        .exclude(pr_number=None)
        .exclude(head_branch="")
        .order_by("-created_at")
        .values_list("head_branch", "pr_number")
        .first()
    )
    if earlier is None:
        return None
    return EarlierPull(earlier[0], body + UPDATED.format(run_id=run.run_id))


def maintenance_pull_request(run_id: str, *, stop: Callable[[], bool] = lambda: False) -> str:
    """Open the maintenance pull request with the files the run healed or quarantined, or
    commit them onto the one an earlier maintenance run opened while that is still open: one
    maintenance pull request per repository at a time. The stage says which."""
    run = selectors.run_with_repository(run_id)
    stage = STAGE_OF[OPEN_MAINTENANCE_PR]
    if not transitions.stage_begin(run_id, stage):
        raise RunNotActive(f"run {run_id} is no longer active; {stage} was not started")
    report = Artifact.objects.get(run=run, kind=ArtifactKind.VERIFICATION_REPORT).content
    totals, test_dir = report["totals"], run.repository.test_dir.strip("/")
    title = TITLE.format(healed=totals["healed"], quarantined=totals["quarantined"])
    intro = INTRO.format(test_dir=test_dir, sha=run.commit_sha[:12], url=report["target_url"])
    body = intro + pr_section(report, test_dir)
    artifact = pull_request_create(
        run=run,
        files=changed_files(report),
        title=title,
        body=body,
        stop=stop,
        earlier=lambda: earlier_maintenance_pull(run, body),
    )
    pr = artifact.content
    said = PR_UPDATED if pr.get("updated") else PR_OPENED
    note = said.format(number=pr["number"], files=len(pr["files"]))
    transitions.stage_close(run_id, stage, StageStatus.PASSED, note=note)
    return str(artifact.artifact_id)
