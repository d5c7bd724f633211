"""A check run's result on GitHub: conclusion, a summary table, one annotation per failing
test at its file and line, links to the evidence (when ``AMTP_PUBLIC_URL`` says where AMTP
is). The report is the check run's ``verification_report``; a run whose tests could not run
reports the reason as a failure."""

from __future__ import annotations

import re

from django.conf import settings

from repositories.hosts import host_for
from runs import lifecycle, selectors
from runs.errors import RunNotActive
from runs.models import Artifact, ArtifactKind, Run, StageStatus
from runs.stages import REPORT_CHECK_RUN, STAGE_OF
from runs.verification.playwright import clean
from runs.verification.quarantine import headline

CHECK_NAME = "AMTP end-to-end tests"
NO_TESTS_TITLE = "No tests to run"
NOT_RUN_TITLE = "The tests could not run"
TITLE = "{passed} passed, {failed} failed"
REPORTED = "check run {check_run_id}: {conclusion}"
FAILING = ("failed", "quarantined")
_LINE = re.compile(r":(\d+) › ")


def _line(test: dict) -> int:
    found = _LINE.search(test["id"])
    return max(1, int(found.group(1))) if found else 1


def _evidence_link(run: Run, item: dict) -> str:
    base = settings.AMTP_PUBLIC_URL.rstrip("/")
    url = f"{base}/admin/runs/run/{run.run_id}/evidence/{item['path']}"
    return f"[{item['kind']}]({url})" if base else item["path"]


def _summary(run: Run, report: dict) -> str:
    lines = [f"Against {report['target_url']} at `{run.commit_sha[:12]}`.", ""]
    lines += ["| test | file | status | evidence |", "| --- | --- | --- | --- |"]
    for test in report["tests"][:200]:
        links = " ".join(_evidence_link(run, item) for item in test["evidence"][:4])
        title = clean(test["title"], 120).replace("|", "\\|")
        lines.append(f"| {title} | `{test['file']}:{_line(test)}` | {test['status']} | {links} |")
    return "\n".join(lines)[:60000]  # output.summary: at most 65535 characters


def check_contents(run: Run, report: dict | None) -> tuple[str, str, str, list[dict]]:
    """(conclusion, title, summary, annotations) of the run's check."""
    if report is None:
        stage = run.stages.filter(name="verify_tests").first()
        if stage is not None and stage.status == StageStatus.SKIPPED:
            return "neutral", NO_TESTS_TITLE, stage.note or NO_TESTS_TITLE, []
        reason = f"{stage.error_type}: {stage.error_message}" if stage else "unknown"
        return "failure", NOT_RUN_TITLE, clean(reason, 2000), []
    failing = [t for t in report["tests"] if t["status"] in FAILING]
    passed = sum(t["status"] in ("passed", "flaky") for t in report["tests"])
    annotations = [
        {
            "path": test["file"],
            "start_line": _line(test),
            "end_line": _line(test),
            "annotation_level": "failure",
            "title": clean(test["title"], 255),
            "message": headline(test["error"] or test["reason"]) or "failed",
        }
        for test in failing
    ]
    conclusion = "failure" if failing else "success"
    if report["status"] != "verified":
        conclusion = "neutral"
    title = TITLE.format(passed=passed, failed=len(failing))
    return conclusion, title, _summary(run, report), annotations


def check_run_report(run_id: str) -> str:
    """Report the check run's result on GitHub (idempotent: the host finds an earlier
    attempt's check run); the stage passes with the check run's id and conclusion."""
    run = selectors.run_with_repository(run_id)
    stage = STAGE_OF[REPORT_CHECK_RUN]
    if not lifecycle.stage_begin(run_id, stage):
        raise RunNotActive(f"run {run_id} is no longer active; {stage} was not started")
    found = Artifact.objects.filter(run=run, kind=ArtifactKind.VERIFICATION_REPORT).first()
    conclusion, title, summary, annotations = check_contents(run, found and found.content)
    base = settings.AMTP_PUBLIC_URL.rstrip("/")
    result = host_for(run.repository).report_check_run(
        head_sha=run.commit_sha or run.ref,
        name=CHECK_NAME,
        external_id=str(run.run_id),
        conclusion=conclusion,
        title=title,
        summary=summary,
        annotations=annotations,
        details_url=f"{base}/admin/runs/run/{run.run_id}/change/" if base else "",
    )
    note = REPORTED.format(check_run_id=result.check_run_id, conclusion=conclusion)
    lifecycle.stage_close(run_id, stage, StageStatus.PASSED, note=note)
    return str(result.check_run_id)
