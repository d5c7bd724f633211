"""VerifyTests: run the generated tests against the target, heal what failed, report.

``verify(plan, heal=...)`` returns the ``verification_report`` content:

1. Maestro flows cannot run here (no device): validated, reported ``not_executed``, each flow
   ``skipped``; never ``passed``. Without a target URL: ``skipped``, with the reason.
2. Otherwise the tools and the target are checked (VerifierNotInstalled, TargetUnreachable),
   then every spec runs once (Playwright's retries tell ``flaky`` from ``failed``; a test
   that failed the same way twice is not retried a third time: ``Session.run_all``).
   When every test failed and the target answered only errors (5xx), the app is down, not
   the tests wrong: TargetAnswersErrors, before any healing.
3. Each healing round hands the failing tests, their errors and snapshots to the Test Engineer
   (``heal``: a fresh process and session); its heal of each test is judged (``heals``: a
   heal that loosens what a test expects is refused) and the files it changed re-run; a test
   passing now is ``healed``.
4. A test still failing is quarantined: ``test.fixme`` under a comment with its reason, or
   dropped when the repository says so. Never deleted silently, never weakened.

The whole stage shares one time budget (``budget_s``); past it, VerificationTimedOut.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agents import spec_blocks
from agents.file_policy import check_generated_files
from amtp_site.errors import AmtpError
from repositories import targets
from verification import evidence, heals, sandbox, test_data
from verification.box_text import line
from verification.errors import ERRORS_ONLY, TargetAnswersErrors
from verification.playwright import (
    clean,
    preflight,
    probe,
    tool_versions,
)
from verification.quarantine import quarantine
from verification.session import Plan, Row, Session, elapsed_ms, now_iso

NO_TARGET = (
    "no target URL: set the repository's preview URL (or the run's target_url) to run the "
    "generated tests against a live app before the pull request"
)
NO_DEVICE = "not executed: no device or emulator here; flow YAML and commands were validated"
HEAL_FAILED = "the healing session failed ({error})"
HEAL_UNSAID = "changed by the healing session (it did not say how)"

# (heal input, seconds left) → heal output (both validated by the agent runner)
Heal = Callable[[dict, float], dict]


def verify(plan: Plan, *, heal: Heal) -> dict:
    """The ``verification_report`` content for ``plan`` (see the module docstring)."""
    if plan.framework == "maestro":
        check_generated_files(plan.files, framework="maestro", test_dir=plan.test_dir)
        rows = [
            Row(f["path"], f["path"].rsplit("/", 1)[-1], 1, "skipped", reason=NO_DEVICE)
            for f in plan.files
        ]
        return _report(plan, Session(plan), rows, "not_executed", NO_DEVICE, {})
    if not plan.target_url:
        return not_run(plan, "skipped", NO_TARGET)
    preflight(plan.runner)
    sandbox.check_available()
    session = Session(plan)
    answered = probe(plan.target_url, session.policy)
    versions = tool_versions(plan.runner)
    hooks = test_data.Around(
        plan.test_data, target_url=plan.target_url, policy=session.policy, runner=plan.runner
    )
    with hooks:  # the set-up before the first execution, the tear-down after the last
        session.run_all()
        _stop_if_errors_only(session, answered)
        for _ in range(plan.heal_rounds):
            if not session.failing():
                break
            _heal_round(session, heal)
    if plan.quarantine:
        quarantine(session)
    rows = list(session.rows.values())
    return _report(plan, session, rows, "verified", "", versions, hooks.results)


def _stop_if_errors_only(session: Session, answered: int) -> None:
    """TargetAnswersErrors when every test that ran failed and the target answered only server
    errors: its GET / did, or every response the failing tests saw did (and each saw some)."""
    rows = [row for row in session.rows.values() if row.status != "skipped"]
    if not rows or any(row.status != "failed" for row in rows):
        return
    seen = set().union(*(row.statuses for row in rows))
    if answered >= 500:
        what, statuses = "every test failed and GET / of the target", {answered}
    elif seen and min(seen) >= 500 and all(row.statuses for row in rows):
        what, statuses = "every test failed and every response the tests got", seen
    else:
        return
    url = targets.display(session.plan.target_url)
    shown = ", ".join(str(s) for s in sorted(statuses))
    message = ERRORS_ONLY.format(what=what, statuses=shown, url=url)
    if stopped := session.policy.stopped_answering() if session.policy else "":
        message = f"{message} ({stopped})"
    raise TargetAnswersErrors(message, url=url, statuses=sorted(statuses))


def not_run(plan: Plan, status: str, reason: str, hooks: list[dict] | None = None) -> dict:
    """The report of tests that were not run (``skipped``, ``unverified``): each listed;
    ``hooks``: the test data calls made before they could not be."""
    rows = [
        Row(f["path"], b.title, b.line, "skipped", reason=reason)
        for f in plan.files
        for b in spec_blocks.blocks(f["contents"])
    ]
    return _report(plan, Session(plan), rows, status, reason, {}, hooks)


def heal_input(session: Session) -> dict:
    by_file: dict[str, list[Row]] = {}
    for row in session.failing():
        by_file.setdefault(row.file, []).append(row)
    return {
        "run_id": session.plan.run_id,
        "framework": "playwright",
        "target_url": session.plan.target_url,
        "files": [
            {
                "path": path,
                "contents": session.files[path],
                "failures": [
                    {
                        "title": clean(r.title, 1000),
                        "line": max(1, r.line),
                        "error": r.error,
                        "snapshot": {**evidence.EMPTY_SNAPSHOT, **r.snapshot},
                    }
                    for r in rows
                ],
            }
            for path, rows in by_file.items()
        ],
    }


def _heal_round(session: Session, heal: Heal) -> None:
    """One round: the Test Engineer's corrections applied and their files re-run."""
    left = session.left()
    began = time.monotonic()
    failing = session.failing()
    try:
        output = heal(heal_input(session), left)
    except AmtpError as exc:
        problems = exc.details.get("problems") or []
        said = f"{exc.message}: {'; '.join(problems)}" if problems else exc.message
        for row in failing:
            row.reason = HEAL_FAILED.format(error=clean(said, 1000))
        session.rounds.append({"phase": "heal", "duration_ms": elapsed_ms(began)})
        return
    session.rounds.append({"phase": "heal", "duration_ms": elapsed_ms(began)})
    said = {(c["file"], c["title"]): c["change"] for c in output["changes"]}
    changed = []
    for entry in output["files"]:
        before, path = session.files.get(entry["path"]), entry["path"]
        if before is None or before == entry["contents"]:
            continue
        rows = [r for r in failing if r.file == path]
        source, verdicts = heals.apply(
            path, before, entry["contents"], [(r.title, r.line) for r in rows]
        )
        for row in (r for r in rows if r.title in verdicts):
            verdict = verdicts[row.title]
            row.diff, row.refused = verdict.diff, verdict.refused
            row.evidence = [{"heal": "before", **item} for item in row.evidence]
            row.heal = "" if verdict.refused else said.get((path, row.title)) or HEAL_UNSAID
        if source != before:
            changed.append(path)
            session.files[path] = source
    if changed:
        session.run_all("rerun", changed)


def _report(
    plan: Plan,
    session: Session,
    rows: list[Row],
    status: str,
    reason: str,
    versions: dict,
    hooks: list[dict] | None = None,
) -> dict:
    totals = {
        key: sum(r.status == key for r in rows)
        for key in ("passed", "failed", "flaky", "healed", "quarantined", "skipped")
    }
    report = {
        "run_id": plan.run_id,
        "status": status,
        "reason": reason,
        "target_url": targets.display(plan.target_url),
        "framework": plan.framework,
        "tool_versions": versions,
        "settings": {
            "retries": plan.runner.retries,
            "heal_rounds": plan.heal_rounds,
            "timeout_s": plan.budget_s,
            "test_timeout_s": plan.runner.test_timeout_s,
            "failing_tests": plan.failing_tests,
        },
        "timings": {
            "started_at": session.started,
            "finished_at": now_iso(),
            "duration_ms": elapsed_ms(session.clock),
            "rounds": session.rounds,
        },
        "totals": {"tests": len(rows), **totals},
        "tests": [row.entry() for row in rows],
        "files": [{"path": p, "contents": c} for p, c in session.files.items()],
        "evidence_dir": str(plan.evidence_dir),
        "sandbox": {
            "isolated": sandbox.sandboxed(),
            # the hosts the tests named: their text, scrubbed and on one line each
            "blocked": [line(b, 300) for b in session.policy.blocked[:100]]
            if session.policy
            else [],
        },
    }
    return {**report, "test_data": hooks} if hooks else report
