"""A check run's result on GitHub: conclusion, a summary table, one annotation per failing
test at its file and line, links to the evidence (when ``AMTP_PUBLIC_URL`` says where AMTP
is). The report is the check run's ``verification_report``; a run whose tests could not run
reports the reason as a failure.

A check run held for an approval (code that is not the repository's own) is shown while it
waits and when it is decided (:func:`check_run_hold_report`, ReportCheckRunHold), on the same
check run the result then completes.

A generation run's own pull request gets one too (:func:`pull_request_check_report`, from
CreatePullRequest): VerifyTests' report, on the PR's head commit, when the repository is on
GitHub with ``pr_checks`` on.
"""

from __future__ import annotations

import re

from django.conf import settings

from amtp_site.errors import AmtpError
from repositories.hosts import host_for
from repositories.models import Host
from runs import selectors, transitions
from runs.errors import RunNotActive
from runs.models import Artifact, ArtifactKind, Run, StageStatus
from runs.stages import (
    HOLD_APPROVED,
    HOLD_EXPIRED,
    HOLD_HELD,
    HOLD_REJECTED,
    REPORT_CHECK_RUN,
    REVERIFY_TESTS,
    STAGE_OF,
)
from verification.box_text import clean, code, line, markdown
from verification.quarantine import headline

CHECK_NAME = "AMTP end-to-end tests"
NO_TESTS_TITLE = "No tests to run"
NOT_RUN_TITLE = "The tests could not run"
TITLE = "{passed} passed, {failed} failed"
REPORTED = "check run {check_run_id}: {conclusion}"
PR_NOT_CHECKED = "the pull request is open; its check run could not be reported: {error}"
CANCELLED_TITLE = "Cancelled"
CANCELLED_SUMMARY = (
    'This run was cancelled in AMTP before its result was reported. "Re-run" runs the tests again.'
)
# A held check run on GitHub (docs.github.com/rest/checks/runs). While it waits: status
# ``queued``, the API's state of a check run whose work has not started (none of the code
# ran), and no conclusion: a concluded check run would offer GitHub's "Re-run" (a second AMTP
# run for a head that already waits) and the result would have to reopen it. Queued, a
# required check stays pending, so the pull request cannot be merged untested. Approved:
# ``in_progress``, until ReportCheckRun completes that same check run. Rejected or expired:
# completed with a conclusion that still fails a required check, since the code was never
# tested ("Successful check statuses are success, skipped, and neutral",
# docs.github.com/pull-requests/collaborating-with-pull-requests/collaborating-on-repositories-
# with-code-quality-features/troubleshooting-required-status-checks); ``failure`` would say its
# tests failed. Rejected: ``action_required``, whose "additional details should be provided on
# the site specified by details_url" (create-a-check-run): the run's page, who rejected it and
# why; without AMTP_PUBLIC_URL there is no such page, and it is ``cancelled`` (a person stopped
# it before it ran). Expired: ``timed_out``, nobody decided within the approval timeout. Each
# summary says what to do. "If a check run is in an incomplete state for more than 14 days,
# then the check run's conclusion becomes stale" (using-the-rest-api-to-interact-with-checks):
# the approval timeout (AMTP_APPROVAL_TIMEOUT_S, 7 days by default) ends the wait before that.
HELD_TITLE = "Waiting for an approval"
HELD_SUMMARY = (
    "The tests have not run yet: this code is not the repository's own (a pull request from "
    "a fork or by an author without write access, or a deployment of anything but a branch "
    "head), so AMTP runs it only once someone with the approver role approves. {where}\n\n"
    "This check run then shows the result. Until someone decides, it stays queued."
)
HELD_WHERE = "Approve or reject it on the run's page in AMTP: {url}"
HELD_WHERE_NO_URL = "Approve or reject it in AMTP's admin, under Approvals (run `{run_id}`)."
APPROVED_TITLE = "Approved: the tests are running"
APPROVED_SUMMARY = "{message}. The tests run against {target}; this check run shows their result."
REJECTED_TITLE = "Not run: the approval was rejected"
REJECTED_SUMMARY = (
    "The tests did not run: the approval to run this code was {message}\n\n"
    "What to do: address the comment and push; the new head is checked once someone approves "
    'it. Or, once the approvers agree, "Re-run" starts a new run of this commit, which waits '
    "for an approval again."
)
EXPIRED_TITLE = "Not run: nobody approved in time"
EXPIRED_SUMMARY = (
    'The tests did not run: {message}.\n\nWhat to do: "Re-run" starts a new run of this '
    "commit, which waits for an approval again; ask someone with the approver role in AMTP "
    "to decide it. Pushing a new commit does the same."
)
HOLD_REPORTED = "check run {check_run_id}: {state}"
HOLD_NOT_SHOWN = (
    "GitHub did not take the hold's check run ({state}): {error}. The pull request shows no "
    "AMTP check, or its earlier state (queued), until a result replaces it (this run's, a "
    "push's or a Re-run's)"
)
FAILING = ("failed", "quarantined")
PASSING = ("passed", "flaky", "healed")  # healed: passes as the pull request carries it
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
        title = markdown(test["title"], 120)
        where = code(f"{line(test['file'], 200)}:{_line(test)}").replace("|", "\\|")
        lines.append(f"| {title} | {where} | {test['status']} | {links} |")
    return "\n".join(lines)[:60000]  # output.summary: at most 65535 characters


def check_contents(run: Run, report: dict | None) -> tuple[str, str, str, list[dict]]:
    """(conclusion, title, summary, annotations) of the run's check."""
    if run.status == Run.Status.CANCELLED:
        return "cancelled", CANCELLED_TITLE, CANCELLED_SUMMARY, []
    if report is None:
        stage = run.stages.filter(name="verify_tests").first()
        if stage is not None and stage.status == StageStatus.SKIPPED:
            return "neutral", NO_TESTS_TITLE, stage.note or NO_TESTS_TITLE, []
        reason = f"{stage.error_type}: {stage.error_message}" if stage else "unknown"
        return "failure", NOT_RUN_TITLE, clean(reason, 2000), []
    failing = [t for t in report["tests"] if t["status"] in FAILING]
    passed = sum(t["status"] in PASSING for t in report["tests"])
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
    attempt's check run); the stage passes with the check run's id and conclusion. A
    cancelled run's check run concludes ``cancelled`` (the stage stays as the cancel left
    it), unless its result was reported before the cancel arrived."""
    run = selectors.run_with_repository(run_id)
    if run.status == Run.Status.CANCELLED:
        return str(_report(run, run.commit_sha or run.ref, None)[0])
    stage = STAGE_OF[REPORT_CHECK_RUN]
    if not transitions.stage_begin(run_id, stage):
        raise RunNotActive(f"run {run_id} is no longer active; {stage} was not started")
    found = Artifact.objects.filter(run=run, kind=ArtifactKind.VERIFICATION_REPORT).first()
    check_run_id, conclusion = _report(run, run.commit_sha or run.ref, found and found.content)
    note = REPORTED.format(check_run_id=check_run_id, conclusion=conclusion)
    transitions.stage_close(run_id, stage, StageStatus.PASSED, note=note)
    return str(check_run_id)


def hold_contents(run: Run, state: str, message: str) -> tuple[str, str, str]:
    """(status or conclusion, title, summary) of a held check run in ``state``."""
    page = _run_page(run)
    if state == HOLD_HELD:
        where = HELD_WHERE.format(url=page) if page else HELD_WHERE_NO_URL.format(run_id=run.run_id)
        return "queued", HELD_TITLE, HELD_SUMMARY.format(where=where)
    # The approver's name and comment are people's text: escaped to show as it is written.
    shown = markdown(message, 2000)
    if state == HOLD_APPROVED:
        summary = APPROVED_SUMMARY.format(
            message=(shown[:1].upper() + shown[1:]) or "Approved",
            target=markdown(run.target_url, 500) or "the pull request's preview",
        )
        return "in_progress", APPROVED_TITLE, summary
    if state == HOLD_REJECTED:
        conclusion = "action_required" if page else "cancelled"
        return conclusion, REJECTED_TITLE, REJECTED_SUMMARY.format(message=shown)
    if state == HOLD_EXPIRED:
        return "timed_out", EXPIRED_TITLE, EXPIRED_SUMMARY.format(message=shown)
    raise ValueError(f"unknown hold state {state!r}")


def check_run_hold_report(run_id: str, state: str, message: str = "") -> str:
    """A held check run's ``state`` on GitHub: shown ``queued`` while it waits, ``in_progress``
    once approved, completed when rejected or expired (idempotent: the host finds the check
    run by the run id). A check run completed already (the cancel's, which came first) is
    left as it is. No stage bookkeeping: the hold is ``verify_tests``' and its end the run's;
    GitHub refusing it is that stage's note (cleared once a report is taken; the stage's own
    note replaces it when it runs; a rejected or expired run keeps it)."""
    run = selectors.run_with_repository(run_id)
    shown, title, summary = hold_contents(run, state, message)
    check = {
        "head_sha": run.commit_sha or run.ref,
        "name": CHECK_NAME,
        "external_id": str(run.run_id),
        "title": title,
        "summary": summary,
        "details_url": _run_page(run),
    }
    host, held = host_for(run.repository), STAGE_OF[REVERIFY_TESTS]
    try:
        if state in (HOLD_HELD, HOLD_APPROVED):
            result = host.show_check_run(status=shown, **check)
        else:
            result = host.report_check_run(conclusion=shown, annotations=[], **check)
    except AmtpError as exc:  # on the held stage, where the run's page shows it, not a log only
        why = HOLD_NOT_SHOWN.format(state=shown, error=f"{type(exc).__name__}: {exc.message}")
        transitions.stage_note(run_id, held, why)
        raise
    transitions.stage_note(run_id, held, "")  # an earlier attempt's refusal is over
    return HOLD_REPORTED.format(check_run_id=result.check_run_id, state=shown)


def _run_page(run: Run) -> str:
    """The run's page in AMTP (its stages, approvals and the Approve / Reject buttons), ""
    when AMTP_PUBLIC_URL does not say where AMTP is."""
    base = settings.AMTP_PUBLIC_URL.rstrip("/")
    return f"{base}/admin/runs/run/{run.run_id}/change/" if base else ""


def pull_request_check_report(run: Run, head_sha: str, report: dict | None) -> str:
    """The check run of a generation run's pull request at ``head_sha``: what it reported, as
    a note for the stage ("" when the repository takes none: not on GitHub, ``pr_checks``
    off, or no verification report). Idempotent as :func:`check_run_report`. A retryable
    failure (a GitHub 5xx) is raised, for Temporal to retry CreatePullRequest, which adopts
    the PR it opened; a final one (no Checks permission) is the note: the PR stands."""
    repository = run.repository
    if report is None or repository.host != Host.GITHUB or not repository.pr_checks:
        return ""
    try:
        check_run_id, conclusion = _report(run, head_sha, report)
    except AmtpError as exc:
        if exc.retryable:
            raise
        return PR_NOT_CHECKED.format(error=exc.message)
    return REPORTED.format(check_run_id=check_run_id, conclusion=conclusion)


def _report(run: Run, head_sha: str, report: dict | None) -> tuple[int, str]:
    """(check run id, conclusion) of ``run``'s check run on ``head_sha``, reported."""
    conclusion, title, summary, annotations = check_contents(run, report)
    result = host_for(run.repository).report_check_run(
        head_sha=head_sha,
        name=CHECK_NAME,
        external_id=str(run.run_id),
        conclusion=conclusion,
        title=title,
        summary=summary,
        annotations=annotations,
        details_url=_run_page(run),
    )
    return result.check_run_id, conclusion
