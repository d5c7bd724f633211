"""One VerifyTests stage's state: its plan, the report's rows as they evolve through the
rounds, and the session that runs the files in a fresh sandbox per execution within the
stage's one time budget (``verification.verify`` drives it; ``quarantine`` marks what
still fails)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from verification import evidence, heals, proxy, sandbox, test_data
from verification.box_text import line
from verification.errors import VerificationTimedOut
from verification.login import Login
from verification.playwright import (
    TIMED_OUT,
    Runner,
    TestResult,
    clean,
    execute,
    log_in,
    same_failure,
)
from verification.quarantine import set_aside

MAX_RESTARTS = 3  # an app that crashes more often in one round is left down after that
CRASHED = "the app crashed on {request} ({how})"
CRASHED_UNNAMED = "the app crashed while this test ran ({how})"


class LiveApp(Protocol):
    """An app AMTP started itself for the stage (verification.boot.app.Booted): a crash of it is a
    finding about the test that caused it, not the end of the stage."""

    ended_at: float | None  # time.time() when its process ended; None while it runs

    def exit_note(self) -> str:
        """How it ended: its exit code and the last lines of its log, scrubbed."""
        ...

    def restart(self) -> None:
        """Start it again and wait until it is ready (a VerificationError when it is not)."""
        ...


@dataclass(frozen=True)
class Plan:
    run_id: str
    framework: str
    files: list[dict]
    target_url: str
    test_dir: str
    failing_tests: str  # "fixme" | "drop"
    heal_rounds: int
    budget_s: float
    runner: Runner
    evidence_dir: Path  # this run's folder
    allow_hosts: list[str] = field(default_factory=list)  # the repository's allowed hosts
    quarantine: bool = True  # False: a check reports failing tests and changes no file
    test_data: test_data.Hooks | None = None  # the repository's set-up and tear-down
    login: Login | None = None  # the tests run logged in (its credentials already scrubbed)
    app: LiveApp | None = None  # the app AMTP started for the run (restarted when it crashes)


@dataclass
class Row:
    """One test of the report, as it evolves through the rounds."""

    file: str
    title: str
    line: int
    status: str
    duration_ms: int = 0
    attempts: int = 0
    error: str = ""
    reason: str = ""
    heal: str = ""
    diff: str = ""  # the heal of this test, taken or refused
    refused: str = ""  # why the heal was refused (heals.REFUSED)
    evidence: list[dict] = field(default_factory=list)
    snapshot: dict = field(default_factory=dict)
    statuses: set[int] = field(default_factory=set)  # every response its failures saw
    retake: bool = False  # run again after the app's restart: its next result is its own

    def entry(self) -> dict:
        return {
            "id": line(f"{self.file}:{self.line} › {self.title}", 300),
            "title": line(self.title, 1000),
            "file": self.file,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "attempts": self.attempts,
            "error": self.error,
            "reason": clean(self.reason, 2000),
            "heal": clean(self.heal, 2000),
            "diff": clean(self.diff, heals.MAX_DIFF_CHARS),
            "evidence": self.evidence,
        }


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class Session:
    """One stage's executions: the current files, the rows, the rounds and the budget."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.files = {f["path"]: f["contents"] for f in plan.files}
        self.rows: dict[tuple[str, str], Row] = {}
        self.rounds: list[dict] = []
        self.started = now_iso()
        self.clock = time.monotonic()
        self.deadline = self.clock + plan.budget_s
        self.policy = proxy.Policy(plan.target_url, plan.allow_hosts) if plan.target_url else None
        self.state: dict[str, bytes] | None = None  # the login's saved files, once logged in

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise VerificationTimedOut(TIMED_OUT.format(budget=self.plan.budget_s))
        return left

    def run_all(self, phase: str = "run", paths: list[str] | None = None) -> None:
        """``paths`` (every file), retried as Playwright retries (``flaky`` or ``failed``),
        except that a test failing the same way twice is not run a third time: the execution
        allows one retry; only the tests whose two attempts failed differently get the rest,
        in a ``retry`` execution of their own."""
        retries = self.plan.runner.retries
        results = self.execute(phase, paths or list(self.files), retries=min(retries, 1))
        results += self._retries(phase, results)
        self._recover(results)

    def _retries(self, phase: str, results: list[TestResult]) -> list[TestResult]:
        retries = self.plan.runner.retries
        differing = [
            r
            for r in results
            if r.status == "failed"
            and len(r.attempts) >= 2
            and not same_failure(r.attempts[-2].error, r.attempts[-1].error)
        ]
        if retries >= 2 and differing:
            files = sorted({r.file for r in differing})
            only = sorted({r.title for r in differing})
            record_all = phase == "rerun"  # a healed test's passing attempt is its evidence
            return self.execute(
                "retry", files, retries=retries - 2, only=only, record_all=record_all
            )
        return []

    def _recover(self, results: list[TestResult]) -> None:
        """When the app AMTP started ended during these executions: the test that was running
        when the request it ended on arrived is set aside (quarantined: "the app
        crashed on GET /path", with how it ended), the app restarted, and the tests that
        failed run again against it. Up to MAX_RESTARTS times."""
        app = self.plan.app
        for _ in range(MAX_RESTARTS):
            if app is None or (ended := app.ended()) is None:
                return
            how = app.exit_note()
            app.restart()  # before anything else: the stage goes on with an app either way
            request = self.policy.crash_cause(ended) if self.policy else None
            moment = request.at if request else ended
            culprit = next((r for r in results if any(a.ran_at(moment) for a in r.attempts)), None)
            if culprit is None:
                return  # nothing to blame: what failed is healed or quarantined as usual
            why = (
                CRASHED.format(request=request.shown, how=how)
                if request
                else CRASHED_UNNAMED.format(how=how)
            )
            set_aside(self, self.rows[(culprit.file, culprit.title)], why)
            failing = self.failing()
            if not failing:
                return
            for row in failing:
                row.retake = True
            files = sorted({r.file for r in failing})
            only = sorted({r.title for r in failing})
            retries = min(self.plan.runner.retries, 1)
            results = self.execute("restart", files, retries=retries, only=only)
            results += self._retries("restart", results)

    def execute(
        self,
        phase: str,
        paths: list[str],
        *,
        retries: int | None = None,
        only: list[str] | None = None,
        record_all: bool | None = None,
    ) -> list[TestResult]:
        began = time.monotonic()
        runner = self.plan.runner if retries is None else replace(self.plan.runner, retries=retries)
        state = self._log_in() if self.plan.login else None
        box = sandbox.Box()
        try:
            with proxy.serving(box.socket, self.policy):
                results = execute(
                    [{"path": p, "contents": self.files[p]} for p in paths],
                    box=box,
                    base_url=self.plan.target_url,
                    runner=runner,
                    budget_s=self.left(),
                    # the healed attempts' evidence too
                    record_all=phase == "rerun" if record_all is None else record_all,
                    state=state,
                    only=only,
                )
            for result in results:
                self._record(result, box.work, f"{phase}-{len(self.rounds) + 1}")
        except VerificationTimedOut:  # named by the stage's budget, not what was left of it
            raise VerificationTimedOut(TIMED_OUT.format(budget=self.plan.budget_s)) from None
        finally:
            box.remove()
        self.rounds.append({"phase": phase, "duration_ms": elapsed_ms(began)})
        return results

    def _log_in(self) -> dict[str, bytes]:
        """The storage state of a login in a box of its own: the specs' box never holds the
        credentials, only the session they opened. Once per stage: every execution (the
        run, the heal's rerun) starts from the same session, and a setup that signs up
        makes one account, not one per execution."""
        if self.state is not None:
            return self.state
        box = sandbox.Box()
        try:
            with proxy.serving(box.socket, self.policy):
                self.state = log_in(
                    self.plan.login,
                    box=box,
                    base_url=self.plan.target_url,
                    runner=self.plan.runner,
                    budget_s=self.left(),
                )
                return self.state
        except VerificationTimedOut:
            raise VerificationTimedOut(TIMED_OUT.format(budget=self.plan.budget_s)) from None
        finally:
            box.remove()

    def _record(self, result: TestResult, scratch: Path, prefix: str) -> None:
        key = (result.file, result.title)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = Row(result.file, result.title, result.line, result.status)
        elif row.status != "failed":
            return  # a rerun re-runs the file's passing tests too; their first result stands
        elif result.status in ("passed", "flaky"):  # a failing test passing on the rerun
            again = result.status if row.retake else "flaky"  # failed only as the app was down
            row.status, row.error = ("healed" if row.heal else again), ""
        row.retake = False
        failure = result.failure
        row.line = result.line
        row.duration_ms += result.duration_ms
        row.attempts += len(result.attempts)
        if failure is not None:
            row.error = failure.error if row.status in ("failed", "flaky") else row.error
            row.snapshot = evidence.snapshot(failure)
            row.statuses |= evidence.statuses(failure)
        # a healed test's evidence after its heal is its last attempt's, passed or failed
        shown = result.attempts[-1] if row.diff and result.attempts else failure
        kept = evidence.keep(shown, scratch=scratch, folder=self.plan.evidence_dir, prefix=prefix)
        row.evidence += [{**item, "heal": "after"} for item in kept] if row.diff else kept

    def failing(self) -> list[Row]:
        return [row for row in self.rows.values() if row.status == "failed"]


def elapsed_ms(since: float) -> int:
    return max(0, int((time.monotonic() - since) * 1000))
