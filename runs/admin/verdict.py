"""The run page's verdict: one line with the run's outcome and counts, coloured by what needs
a person's attention (the way CI systems head a build page), and the tone of stage notes.

A run that passed with a quarantined, flaky or failed test, or whose tests were never run
against the app, is "attention", not plain green: its most important test may be the one
that did not pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.text import Truncator

from runs import checks
from runs.models import Run, Stage, StageStatus
from verification.exploration.service import ANSWERED_ERRORS

OK, ATTENTION, FAILED, RUNNING, NEUTRAL = "ok", "attention", "failed", "running", "neutral"
COLOURS = {
    OK: "#15803d",
    ATTENTION: "#b45309",
    FAILED: "#b91c1c",
    RUNNING: "#2563eb",
    NEUTRAL: "#4b5563",
}
# Counts that need a person's eyes, in the order the line names them.
NEEDS_EYES = ("failed", "quarantined", "flaky")
# Counts shown after the total when non-zero (passed is implied by the total).
SHOWN = ("healed", "flaky", "quarantined", "failed", "skipped")
LISTED = 2  # titles named per count; the rest are "… N more"
# Notes of stages that passed yet say something went wrong (the stage's error is empty).
WARNING_NOTES = (checks.PR_NOT_CHECKED.split("{", 1)[0],)


@dataclass(frozen=True)
class Verdict:
    """``status``: the run's (the page shows it as a badge in the verdict's colour);
    ``detail``: its counts, or where it failed or waits ("at <stage>…")."""

    level: str
    status: str
    detail: str = ""

    @property
    def colour(self) -> str:
        return COLOURS[self.level]

    @property
    def text(self) -> str:
        if not self.detail:
            return self.status
        return f"{self.status}{' ' if self.detail.startswith('at ') else ': '}{self.detail}"


def verdict(run: Run, stages: list[Stage], report: dict | None) -> Verdict:
    """The run's verdict line from its status, its stages and its verification report."""
    if run.status == Run.Status.FAILED:
        return Verdict(FAILED, "failed", _failed(run, stages))
    if run.status == Run.Status.CANCELLED:
        return Verdict(NEUTRAL, "cancelled")
    if run.status != Run.Status.PASSED:
        stage = _open_stage(stages)
        if stage and stage.status == StageStatus.AWAITING_APPROVAL:  # a person is asked
            return Verdict(ATTENTION, "awaiting approval", _at(stage))
        return Verdict(RUNNING, run.status, _at(stage))
    if report is None:
        return Verdict(OK, "passed")
    return _passed(report)


def note_warns(stage: Stage) -> bool:
    """Whether a stage's note is a warning (shown as one) rather than a neutral remark."""
    if stage.error_type or stage.status in (StageStatus.FAILED, StageStatus.CANCELLED):
        return True
    return stage.note.startswith(WARNING_NOTES) or ANSWERED_ERRORS in stage.note


def _passed(report: dict) -> Verdict:
    totals = report["totals"]
    if report["status"] != "verified":
        why = Truncator(report["reason"]).chars(160)
        state = "unverified" if report["status"] == "unverified" else "not run against an app"
        text = f"{_tests(totals['tests'])} written, {state}"
        return Verdict(ATTENTION, "passed", f"{text} ({why})" if why else text)
    parts = [_tests(totals["tests"])]
    for count in SHOWN:
        if totals.get(count):
            parts.append(f"{totals[count]} {count}{_named(report['tests'], count)}")
    level = ATTENTION if any(totals.get(c) for c in NEEDS_EYES) else OK
    return Verdict(level, "passed", ", ".join(parts))


def _named(tests: list[dict], status: str) -> str:
    """ " (title: reason, …)" for the tests that need a look; "" for the others."""
    if status not in NEEDS_EYES:
        return ""
    found = [t for t in tests if t["status"] == status]
    named = [
        Truncator(f"{t['title']}: {t['reason'] or t['error']}".rstrip(": ")).chars(90)
        for t in found[:LISTED]
    ]
    if len(found) > LISTED:
        named.append(f"… {len(found) - LISTED} more")
    return f" ({'; '.join(named)})" if named else ""


def _failed(run: Run, stages: list[Stage]) -> str:
    stage = next((s for s in stages if s.status == StageStatus.FAILED), None)
    message = Truncator(run.error_message.splitlines()[0]).chars(200) if run.error_message else ""
    said = ": ".join(part for part in (run.error_type, message) if part)
    return ": ".join(part for part in (_at(stage), said) if part)


def _open_stage(stages: list[Stage]) -> Stage | None:
    """The stage the run is at: one waiting for a person, else the running one, else the
    first still pending."""
    for status in (StageStatus.AWAITING_APPROVAL, StageStatus.RUNNING, StageStatus.PENDING):
        if found := next((s for s in stages if s.status == status), None):
            return found
    return None


def _at(stage: Stage | None) -> str:
    return f"at {stage.get_name_display()}" if stage else ""


def _tests(count: int) -> str:
    return f"{count} test" if count == 1 else f"{count} tests"
