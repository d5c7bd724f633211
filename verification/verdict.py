"""The verdict of one box execution: how Playwright's results reach the worker, and the check
that they describe the specs the worker listed.

The channel: a pipe. The worker keeps the read end; the write end goes into the box as the
runner's fd 3 (``entry.mjs`` hands it to the Playwright runner alone, ``box/runner.mjs``). It is
never a file in the box's writable space, so a spec that rewrites or locks a report file
changes nothing. No spec code runs in the runner: the specs load in a loader process and run
in worker processes, which do not inherit the pipe, and the runner is non-dumpable, so they
cannot open it through ``/proc/<pid>/fd`` either (docs/security.md, "The verdict"). Still,
whatever arrives is read as hostile, bounded, field by field, and must name exactly the listed
specs' tests, or the verification ends as "report not trustworthy" (ReportNotTrustworthy),
never as passed: the loader's list of tests and each worker's results are the specs' word.

Attachment paths are the box's word too: each is resolved (symlinks followed) and kept only
inside the box's ``results/`` folder, so the evidence and the heal request read nothing else.
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agents import spec_blocks
from verification.box_text import clean, line
from verification.errors import ReportNotTrustworthy

MAX_VERDICT_BYTES = 16 << 20
DRAIN_S = 10.0  # the pipe ends when the box does; this catches a holder that outlived it
UNTRUSTWORTHY = "report not trustworthy: {why}; no test is reported as passed"
OUTCOMES = {"expected": "passed", "unexpected": "failed", "flaky": "flaky", "skipped": "skipped"}
RESULT_STATUSES = ("passed", "failed", "timedOut", "skipped", "interrupted")
MAX_RESULTS = 100  # attempts of one test (retries + 1, far below)
MAX_ATTACHMENTS = 100
MAX_DURATION_MS = 7 * 24 * 3600 * 1000
MAX_START_MS = 10**14  # the year 5138: past it, not a time


@dataclass
class Attempt:
    status: str  # passed | failed | timedOut | skipped | interrupted
    duration_ms: int
    error: str
    attachments: list[tuple[str, str, str]]  # (name, content type, resolved path in results/)
    # when it began, in ms since the epoch (the box shares the worker's clock): which test was
    # running when the app crashed. The box's word: a forged one only misnames its own test.
    started_ms: float | None = None

    def ran_at(self, moment: float) -> bool:
        """Whether this attempt was running at ``moment`` (a time.time())."""
        if self.started_ms is None:
            return False
        began = self.started_ms / 1000
        return began <= moment <= began + self.duration_ms / 1000


@dataclass
class TestResult:
    __test__ = False  # not a pytest class

    file: str
    title: str
    line: int
    status: str  # passed | failed | flaky | skipped
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line} › {self.title}"

    @property
    def duration_ms(self) -> int:
        return sum(a.duration_ms for a in self.attempts)

    @property
    def failure(self) -> Attempt | None:
        """The last failed attempt (the evidence of a failed or flaky test)."""
        failed = [a for a in self.attempts if a.status not in ("passed", "skipped")]
        return failed[-1] if failed else None


class Channel:
    """The verdict's pipe, drained by a thread while the box runs (a report larger than the
    pipe's buffer would block the runner otherwise). ``write_fd`` goes to ``Box.run``, which
    closes it once the box holds it."""

    def __init__(self, limit: int = MAX_VERDICT_BYTES) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.limit = limit
        self.data = bytearray()
        self.size = 0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with open(self.read_fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                self.size += len(chunk)
                if len(self.data) <= self.limit:  # past the limit: read on, keep nothing more
                    self.data += chunk[: self.limit + 1 - len(self.data)]

    def received(self) -> bytes | None:
        """What the runner sent (b"" when nothing); None when the pipe is still held open."""
        self._thread.join(DRAIN_S)
        return None if self._thread.is_alive() else bytes(self.data)


def listed_tests(files: list[dict]) -> tuple[Counter, set[tuple[str, int]]]:
    """The (file, title) of every test in ``files`` whose title is a literal, counted (the
    file policy refuses ``.only``, so Playwright runs them all); and the (file, line) of those
    whose title is not (a loop's template), where any number of tests may be reported."""
    listed: Counter = Counter()
    dynamic: set[tuple[str, int]] = set()
    for entry in files:
        listed.update((entry["path"], b.title) for b in spec_blocks.blocks(entry["contents"]))
        dynamic |= {(entry["path"], n) for n in spec_blocks.dynamic_lines(entry["contents"])}
    return listed, dynamic


def results(
    data: dict,
    files: list[dict],
    where: Callable[[str], Path],
    results_dir: Path,
    listed: Counter | None = None,
) -> list[TestResult]:
    """The verdict as one row per test, in its order; ReportNotTrustworthy unless every field
    is well formed and the tests are exactly those of ``files`` (or ``listed``, when the
    caller knows them otherwise: the login's setup). ``where`` maps an
    attachment's path (as the tests saw it) to where it lies for the worker; only one inside
    ``results_dir`` (after resolving symlinks) is kept."""
    tests, errors = data.get("tests"), data.get("errors", [])
    if set(data) - {"tests", "errors"} or not isinstance(tests, list):
        _untrustworthy("it is not the reporter's object of tests and errors")
    if not isinstance(errors, list) or not all(_is_message(e) for e in errors):
        _untrustworthy("its errors are not messages")
    found = [_result(test, where, results_dir.resolve()) for test in tests]
    listed, dynamic = (listed, set()) if listed is not None else listed_tests(files)
    looped = [r for r in found if (r.file, r.line) in dynamic and (r.file, r.title) not in listed]
    reported = Counter((r.file, r.title) for r in found if r not in looped)
    for key in reported - listed:
        _untrustworthy(f"it names a test not in the listed specs ({line(' › '.join(key), 200)})")
    for key in listed - reported:
        _untrustworthy(f"a listed test is missing from it ({line(' › '.join(key), 200)})")
    return found


def _result(test: object, where: Callable[[str], Path], results_dir: Path) -> TestResult:
    if not isinstance(test, dict):
        _untrustworthy("a test is not an object")
    file, title, at = test.get("file"), test.get("title"), test.get("line")
    attempts = test.get("results")
    if not isinstance(file, str) or not isinstance(title, str):
        _untrustworthy("a test's file or title is not text")
    if not _is_int(at) or at < 1:
        _untrustworthy(f"the field line of {line(title, 200)!r} is not a line number")
    if test.get("status") not in OUTCOMES or test.get("expectedStatus") not in RESULT_STATUSES:
        _untrustworthy(f"the field status of {line(title, 200)!r} is not Playwright's")
    if not isinstance(attempts, list) or len(attempts) > MAX_RESULTS:
        _untrustworthy(f"the field results of {line(title, 200)!r} is not a bounded list")
    status = OUTCOMES[test["status"]]
    if status == "passed" and test["expectedStatus"] == "skipped":
        status = "skipped"
    return TestResult(
        file, title, at, status, [_attempt(a, title, where, results_dir) for a in attempts]
    )


def _attempt(
    result: object, title: str, where: Callable[[str], Path], results_dir: Path
) -> Attempt:
    if not isinstance(result, dict) or result.get("status") not in RESULT_STATUSES:
        _untrustworthy(f"an attempt of {line(title, 200)!r} has no status of Playwright's")
    duration, error = result.get("duration"), result.get("error")
    if not _is_number(duration) or not 0 <= duration <= MAX_DURATION_MS:
        _untrustworthy(f"the field duration of {line(title, 200)!r} is not a number of ms")
    if error is not None and not _is_message(error):
        _untrustworthy(f"the field error of {line(title, 200)!r} is not a message")
    attachments = result.get("attachments", [])
    if not isinstance(attachments, list) or len(attachments) > MAX_ATTACHMENTS:
        _untrustworthy(f"the field attachments of {line(title, 200)!r} is not a bounded list")
    kept = []
    for item in attachments:
        fields = (
            [item.get(k) for k in ("name", "contentType", "path")] if isinstance(item, dict) else []
        )
        if len(fields) != 3 or not all(isinstance(f, str) for f in fields):
            _untrustworthy(f"an attachment of {line(title, 200)!r} is not a name and a path")
        if (inside := confined(where(fields[2]), results_dir)) is not None:
            kept.append((fields[0], fields[1], str(inside)))
    started = result.get("startTime")
    if started is not None and not (_is_number(started) and 0 <= started <= MAX_START_MS):
        _untrustworthy(f"the field startTime of {line(title, 200)!r} is not a time in ms")
    message = error["message"] if error else ""
    return Attempt(result["status"], int(duration), clean(message, 4000), kept, started)


def confined(path: Path, results_dir: Path) -> Path | None:
    """``path`` resolved (symlinks followed), if that is a file inside ``results_dir``
    (itself resolved); else None: the worker opens nothing else on the box's behalf."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError, ValueError):  # missing, a loop, a NUL byte
        return None
    inside = resolved.is_relative_to(results_dir) and resolved != results_dir
    return resolved if inside and resolved.is_file() else None


def _is_number(value: object) -> bool:
    finite = isinstance(value, int | float) and not isinstance(value, bool)
    return finite and math.isfinite(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_message(value: object) -> bool:
    return (
        isinstance(value, dict) and set(value) == {"message"} and isinstance(value["message"], str)
    )


def _untrustworthy(why: str):
    raise ReportNotTrustworthy(UNTRUSTWORTHY.format(why=why))
