"""Run Playwright spec files with Playwright Test against a target URL, in a fresh process.

Each execution gets a scratch directory holding only the spec files, a generated
``playwright.config.mjs`` and a link to the pinned ``@playwright/test``
(``AMTP_VERIFY_RUNNER_DIR/node_modules``, installed by ``npm ci``; no browser download). Node
runs with an environment that carries no secret of this process: PATH, HOME and TMPDIR inside
the scratch directory, BASE_URL, and Playwright's own switches. Chromium is Debian's
(``AMTP_VERIFY_CHROMIUM``), headless. Playwright retries each failing test (``retries``) so a
test that passes on a retry is reported ``flaky``, not ``failed``; its JSON report is read back
into :class:`TestResult` rows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from amtp_site.errors import TargetUnreachable, VerificationTimedOut, VerifierNotInstalled

CLI = "node_modules/@playwright/test/cli.js"
NODE_MISSING = "Node.js is not installed: install node (v20 or later) on the worker"
RUNNER_MISSING = (
    "@playwright/test is not installed in {dir}: run `make venv` (or "
    "`PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix {dir}`) on the worker"
)
BROWSER_MISSING = (
    "Chromium is not installed at {path}: run scripts/ensure_chromium.sh (as root) or set "
    "AMTP_VERIFY_CHROMIUM to a Chromium executable"
)
UNREACHABLE = (
    "the target {url} did not answer ({why}); start the app there or correct the URL "
    "(repository preview URL or the run's target_url), then run again"
)
TIMED_OUT = (
    "the tests did not finish within the verification budget of {budget:.0f} s; raise "
    "AMTP_VERIFY_TIMEOUT_S or use a shallower depth level, then run again"
)
NO_REPORT = "Playwright ended (exit code {code}) without a report: {tail}"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
GRACE_S = 15.0  # Playwright's own globalTimeout fires first; this catches a hung process


@dataclass(frozen=True)
class Runner:
    """Where the tools are and how to run: from settings (``runner_from_settings``)."""

    runner_dir: Path
    chromium: str
    retries: int
    test_timeout_s: float


@dataclass
class Attempt:
    status: str  # passed | failed | timedOut | skipped | interrupted
    duration_ms: int
    error: str
    attachments: list[tuple[str, str, str]]  # (name, content type, absolute path)


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


def clean(text: str, limit: int) -> str:
    text = _ANSI.sub("", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preflight(runner: Runner) -> None:
    """VerifierNotInstalled (saying what to install) unless node, the runner and the browser
    are all there."""
    if shutil.which("node") is None:
        raise VerifierNotInstalled(NODE_MISSING)
    if not (runner.runner_dir / CLI).is_file():
        raise VerifierNotInstalled(RUNNER_MISSING.format(dir=runner.runner_dir))
    if not os.access(runner.chromium, os.X_OK):
        raise VerifierNotInstalled(BROWSER_MISSING.format(path=runner.chromium))


def probe(url: str, timeout_s: float = 5.0) -> None:
    """TargetUnreachable unless ``url`` answers HTTP at all (any status counts: a 404 or a
    500 from the app is for the tests to report)."""
    request = urllib.request.Request(url, method="GET", headers={"User-Agent": "AMTP-verify"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            response.read(1024)
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", exc)
        raise TargetUnreachable(UNREACHABLE.format(url=url, why=why), url=url) from exc


def tool_versions(runner: Runner) -> dict[str, str]:
    versions = {}
    package = runner.runner_dir / "node_modules/@playwright/test/package.json"
    if package.is_file():
        versions["@playwright/test"] = json.loads(package.read_text())["version"]
    for name, cmd in (
        ("node", ["node", "--version"]),
        ("chromium", [runner.chromium, "--version"]),
    ):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        versions[name] = clean(out, 200)
    return versions


def _config(runner: Runner, base_url: str, budget_s: float) -> str:
    config = {
        "testDir": ".",
        "testMatch": "**/*.spec.ts",
        "outputDir": "results",
        "retries": runner.retries,
        "workers": 1,
        "timeout": int(runner.test_timeout_s * 1000),
        "globalTimeout": max(1000, int(budget_s * 1000)),
        "reporter": [["json", {"outputFile": "report.json"}], ["line"]],
        "use": {
            "baseURL": base_url,
            "trace": "retain-on-failure",
            "screenshot": "only-on-failure",
            "launchOptions": {
                "executablePath": runner.chromium,
                "headless": True,
                "args": CHROMIUM_ARGS,
            },
        },
    }
    return f"export default {json.dumps(config, indent=2)};\n"


def scrubbed_env(scratch: Path, base_url: str, runner: Runner) -> dict[str, str]:
    """The whole environment of the test process: no variable of this one leaks (no keys,
    no tokens, no database URL)."""
    node_dir = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    return {
        "PATH": f"{node_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch / "home"),
        "TMPDIR": str(scratch / "tmp"),
        "BASE_URL": base_url,
        "NODE_PATH": str(runner.runner_dir / "node_modules"),
        "CI": "1",
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "PW_TEST_HTML_REPORT_OPEN": "never",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def execute(
    files: list[dict], *, scratch: Path, base_url: str, runner: Runner, budget_s: float
) -> list[TestResult]:
    """Run ``files`` (``{"path", "contents"}``) in ``scratch`` (created, left for the caller to
    keep evidence from); VerificationTimedOut past ``budget_s``."""
    for sub in ("home", "tmp"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    for entry in files:
        target = scratch / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry["contents"], encoding="utf-8")
    (scratch / "node_modules").symlink_to(runner.runner_dir / "node_modules")
    (scratch / "playwright.config.mjs").write_text(_config(runner, base_url, budget_s))
    cmd = ["node", str(runner.runner_dir / CLI), "test", "--config", "playwright.config.mjs"]
    env = scrubbed_env(scratch, base_url, runner)
    process = subprocess.Popen(
        cmd,
        cwd=scratch,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: a timeout kills node and chromium
    )
    started = time.monotonic()
    try:
        output, _ = process.communicate(timeout=budget_s + GRACE_S)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.communicate()
        raise VerificationTimedOut(TIMED_OUT.format(budget=budget_s)) from None
    finally:
        _kill_group(process.pid)  # workers or browsers Playwright left behind, if any
    (scratch / "playwright.log").write_bytes(output)
    report = scratch / "report.json"
    if not report.is_file():
        tail = clean(output.decode("utf-8", "replace")[-1500:], 1500)
        raise VerifierNotInstalled(NO_REPORT.format(code=process.returncode, tail=tail))
    data = json.loads(report.read_text())
    if any("Timed out waiting" in e.get("message", "") for e in data.get("errors", [])):
        raise VerificationTimedOut(TIMED_OUT.format(budget=budget_s))
    if time.monotonic() - started > budget_s + GRACE_S:
        raise VerificationTimedOut(TIMED_OUT.format(budget=budget_s))
    return parse_report(data)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def parse_report(data: dict) -> list[TestResult]:
    """Playwright's JSON report as one row per test, in report order."""
    found: list[TestResult] = []
    suites = list(data.get("suites", []))
    while suites:
        suite = suites.pop(0)
        for spec in suite.get("specs", []):
            for test in spec.get("tests", []):
                found.append(_result(spec, test))
        suites[:0] = suite.get("suites", [])
    return found


_STATUS = {"expected": "passed", "unexpected": "failed", "flaky": "flaky", "skipped": "skipped"}


def _result(spec: dict, test: dict) -> TestResult:
    attempts = [
        Attempt(
            status=r.get("status", "failed"),
            duration_ms=int(r.get("duration", 0)),
            error=clean((r.get("error") or {}).get("message", ""), 4000),
            attachments=[
                (a.get("name", ""), a.get("contentType", ""), a["path"])
                for a in r.get("attachments", [])
                if a.get("path")
            ],
        )
        for r in test.get("results", [])
    ]
    status = _STATUS.get(test.get("status", ""), "failed")
    if status == "passed" and test.get("expectedStatus") == "skipped":
        status = "skipped"
    return TestResult(
        file=spec.get("file", ""),
        title=spec.get("title", ""),
        line=int(spec.get("line", 0)),
        status=status,
        attempts=attempts,
    )
