"""Run Playwright spec files with Playwright Test against a target URL, in a fresh process.

Each execution gets a scratch directory holding only the spec files, a generated
``playwright.config.mjs`` and a link to the pinned ``@playwright/test``
(``AMTP_VERIFY_RUNNER_DIR/node_modules``, installed by ``npm ci``; no browser download). Node
runs with an environment that carries no secret of this process: PATH, HOME and TMPDIR inside
the scratch directory, BASE_URL, and Playwright's own switches. Chromium is Debian's
(``AMTP_VERIFY_CHROMIUM``), headless. Playwright retries each failing test (``retries``) so a
test that passes on a retry is reported ``flaky``, not ``failed``. The runner is AMTP's
``box/runner.mjs`` (Playwright's TestRunner: the specs load in a process of their own, never
beside the verdict); its verdict comes back over a pipe and is read into :class:`TestResult`
rows (``verdict.py``).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from agents import spec_blocks
from repositories import targets
from verification import sandbox, verdict
from verification.box_text import clean
from verification.errors import (
    LoginFailed,
    ReportNotTrustworthy,
    TargetUnreachable,
    VerificationTimedOut,
    VerifierNotInstalled,
)
from verification.login import (
    ACCOUNT_FILE,
    MAX_STATE_BYTES,
    NO_STATE,
    SETUP_FILE,
    SETUP_TITLE,
    SETUP_USE,
    STATE_FILE,
    Login,
    setup_source,
    without_setup,
)
from verification.proxy import Blocked, Policy
from verification.verdict import Attempt, TestResult

CLI = "node_modules/@playwright/test/cli.js"
NODE_MISSING = "Node.js is not installed: install node (v20 or later) on the worker"
RUNNER_MISSING = (
    "@playwright/test is not installed in {dir}: run `make venv` (or "
    "`PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix {dir}`) on the worker"
)
BROWSER_MISSING = (
    "Chromium is not installed at {path}: run scripts/ensure_packages.sh (as root) or set "
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
BAD_REPORT = "it is over 16 MiB or not a JSON object"
HUNG = (
    "did not finish: the suite was stopped after {limit:.0f} s, as long as all its tests may "
    "take (an endless loop or a hang in this test or one before it)"
)
SUITE_SLACK_S = 20.0  # the runner's and the browser's start, on a busy machine
TAIL_BYTES = 1500
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    # Chromium asks Google about forms it sees: noise in every report's list of refused hosts.
    "--disable-features=AutofillServerCommunication",
]
GRACE_S = 15.0  # the runner's own time limit fires first; this catches a hung process


@dataclass(frozen=True)
class Runner:
    """Where the tools are and how to run: from settings (``runner_from_settings``)."""

    runner_dir: Path
    chromium: str
    retries: int
    test_timeout_s: float
    expect_timeout_s: float = 5.0  # Playwright's own default


def preflight(runner: Runner) -> None:
    """VerifierNotInstalled (saying what to install) unless node, the runner and the browser
    are all there."""
    if shutil.which("node") is None:
        raise VerifierNotInstalled(NODE_MISSING)
    if not (runner.runner_dir / CLI).is_file():
        raise VerifierNotInstalled(RUNNER_MISSING.format(dir=runner.runner_dir))
    if not os.access(runner.chromium, os.X_OK):
        raise VerifierNotInstalled(BROWSER_MISSING.format(path=runner.chromium))


def probe(url: str, policy: Policy, timeout_s: float = 5.0, path: str = "/") -> int:
    """The status ``GET path`` (``/``) of ``url`` answers; TargetUnreachable unless it answers HTTP at
    all. Any status passes here: a 404 or a 500 is for the tests to report, and the stage
    weighs a 5xx with their results (TargetAnswersErrors). It goes where the tests' proxy
    would: the address the name is pinned to, refused where the network rule refuses; no
    redirect is followed."""
    scheme, host, port = targets.origin(url)
    shown = targets.display(url)
    try:
        address = policy.address(host, port)
        sock = socket.create_connection((address, port), timeout=timeout_s)
        if scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
        connection.sock = sock
        with sock:
            connection.request("GET", path, headers={"User-Agent": "AMTP-verify"})
            response = connection.getresponse()
            response.read(1024)
            return response.status
    except (Blocked, OSError, http.client.HTTPException, ValueError) as exc:
        why = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        raise TargetUnreachable(UNREACHABLE.format(url=shown, why=why), url=shown) from exc


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


def _config(
    runner: Runner,
    base_url: str,
    login: Login | None = None,
    record_all: bool = False,
    state: bool = False,
) -> str:
    """The box's Playwright config. ``record_all``: a trace and a screenshot of every test,
    passing ones included (a healed test's passing attempt is the "after" of its heal);
    ``login``: the setup's box (its file alone, nothing recorded); ``state``: the tests start
    from the storage state the setup's box saved."""
    config = {
        "testDir": ".",
        "testMatch": "**/*.spec.ts",
        "outputDir": "results",
        "workers": 1,
        "timeout": int(runner.test_timeout_s * 1000),
        "expect": {"timeout": int(runner.expect_timeout_s * 1000)},
        # the verdict goes to the worker's pipe (runner.mjs); the line reporter to the output.
        # Retries and the suite's time limit are the runner's arguments (``_run``).
        "reporter": [["line"]],
        "use": {
            "baseURL": base_url,
            # A failed test keeps its trace's actions, DOM snapshots and network, and its own
            # screenshot; the trace's screencast, which Chromium encodes all through every
            # test and which is thrown away when the test passes, is recorded only with
            # ``record_all`` (measured: about a fifth of a three-test run's CPU).
            "trace": "on" if record_all else {"mode": "retain-on-failure", "screenshots": False},
            "screenshot": "on" if record_all else "only-on-failure",
            "proxy": BOX_PROXY,
            "launchOptions": launch_options(runner),
        },
    }
    if login is not None:
        config["testMatch"] = f"**/{SETUP_FILE}"
        config["use"].update(SETUP_USE)
    if state:
        config["use"]["storageState"] = STATE_FILE
    return f"export default {json.dumps(config, indent=2)};\n"


# The box's one way out: the bridge to the worker's allow-listing proxy.
BOX_PROXY = {"server": f"http://127.0.0.1:{sandbox.BRIDGE_PORT}"}


def launch_options(runner: Runner) -> dict:
    """How Chromium starts in the box (Playwright's launch options)."""
    return {
        "executablePath": runner.chromium,
        "headless": True,
        # Chromium's own sandbox needs new user namespaces, which the box's seccomp filter
        # refuses to every process in it: the box is the browser's sandbox (docs/security.md).
        "chromiumSandbox": False,
        "args": CHROMIUM_ARGS,
    }


def furnish(box: sandbox.Box, runner: Runner) -> tuple[Path, str]:
    """The box's home and temporary folders, and its link to the runner's ``node_modules``:
    (where they lie for the worker, where the code sees them)."""
    for sub in ("home", "tmp"):
        (box.work / sub).mkdir(parents=True, exist_ok=True)
    modules = (runner.runner_dir / "node_modules").resolve()
    inside = box.runner_modules(modules)
    (box.work / "node_modules").symlink_to(inside)
    return modules, inside


def box_env(box: sandbox.Box, base_url: str) -> dict[str, str]:
    """The whole environment of the test process: nothing of this one's (no keys, no tokens,
    no database URL), paths as the code sees them."""
    code = box.code_dir
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": f"{code}/home",
        "TMPDIR": f"{code}/tmp",
        "BASE_URL": base_url,
        "CI": "1",
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "PLAYWRIGHT_BROWSERS_PATH": "0",
        "PW_TEST_HTML_REPORT_OPEN": "never",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def execute(
    files: list[dict],
    *,
    box: sandbox.Box,
    base_url: str,
    runner: Runner,
    budget_s: float,
    record_all: bool = False,
    state: dict[str, bytes] | None = None,
    only: list[str] | None = None,
) -> list[TestResult]:
    """Run ``files`` (``{"path", "contents"}``) in ``box`` (its proxy already listening),
    starting from the storage ``state`` of :func:`log_in` when there is one;
    VerificationTimedOut past ``budget_s``, VerifierNotInstalled when no report comes back,
    ReportNotTrustworthy when what comes back is not a report of ``files``. ``record_all``: a
    trace and a screenshot of every test, passing ones included; ``only``: the titles of the
    tests to run (Playwright's ``--grep``), all when None."""
    for name, data in (state or {}).items():  # the session, and the account's user name
        (box.work / name).parent.mkdir(parents=True, exist_ok=True)
        (box.work / name).write_bytes(data)
    limit = min(budget_s, suite_seconds(files, runner))
    config = _config(runner, base_url, record_all=record_all, state=bool(state))
    grep = "|".join(re.escape(title) for title in only) if only else ""
    data = _run(box, files, config, box_env(box, base_url), runner, budget_s, limit, grep)
    listed = None
    if only:  # the verdict must name exactly the tests --grep selects
        every, _ = verdict.listed_tests(files)
        listed = Counter(
            {key: n for key, n in every.items() if any(t in " ".join(key) for t in only)}
        )
    errors = data.get("errors")  # the box's word: read as a list only when it is one
    timed_out = isinstance(errors, list) and any("Timed out waiting" in str(e) for e in errors)
    # out of budget, or stopped before the specs were even listed (a spec that loops at load)
    if timed_out and (limit >= budget_s or not data.get("tests")):
        raise VerificationTimedOut(TIMED_OUT.format(budget=budget_s))
    results = verdict.results(data, files, box.outside, box.work / "results", listed)
    if timed_out:
        for result in results:  # the test that hung, and those it kept from running
            said = result.failure.error if result.failure else ""
            if result.status in ("skipped", "failed") and not said:
                result.status = "failed"
                result.attempts.append(Attempt("timedOut", 0, HUNG.format(limit=limit), []))
    return results


def same_failure(first: str, second: str) -> bool:
    """Two failed attempts failed the same way: the same message, numbers aside (a duration, a
    port, a retry's tag differ from one attempt to the next)."""

    def shape(error: str) -> str:
        return re.sub(r"\d+", "#", error.split("Call log:")[0]).strip()

    return shape(first) == shape(second)


def log_in(
    login: Login, *, box: sandbox.Box, base_url: str, runner: Runner, budget_s: float
) -> dict[str, bytes]:
    """Run the setup written from ``login``'s recipe in ``box`` (its proxy already listening),
    the one box given the credentials; the files it saved for the specs' box: the storage
    state, and a sign-up's account name (``ACCOUNT_FILE``, when it is a small JSON object
    naming it). LoginFailed when it did not log in (or left no state), as :func:`execute`
    otherwise."""
    setup = [{"path": SETUP_FILE, "contents": setup_source(login.recipe)}]
    limit = min(budget_s, runner.test_timeout_s * (runner.retries + 1) + SUITE_SLACK_S)
    config = _config(runner, base_url, login)
    env = {**box_env(box, base_url), **login.env()}
    data = _run(box, setup, config, env, runner, budget_s, limit)
    listed = Counter({(SETUP_FILE, SETUP_TITLE): 1})
    without_setup(
        verdict.results(data, setup, box.outside, box.work / "results", listed), login.recipe
    )
    state = _saved(box, STATE_FILE, MAX_STATE_BYTES)
    if state is None:
        raise LoginFailed(NO_STATE.format(path=login.recipe.path, STATE_FILE=STATE_FILE))
    account = _saved(box, ACCOUNT_FILE, 1024)
    try:
        name = json.loads(account or b"{}").get("username")
    except (ValueError, AttributeError):
        name = None
    named = isinstance(name, str) and re.fullmatch(r"[\w.@+-]{1,80}", name)
    return {STATE_FILE: state, **({ACCOUNT_FILE: account} if named and account else {})}


def _saved(box: sandbox.Box, name: str, limit: int) -> bytes | None:
    """A file the setup saved in ``box``: a regular file inside it, at most ``limit`` bytes."""
    try:
        found = (box.work / name).resolve(strict=True)
        held = found.is_relative_to(box.work.resolve()) and found.is_file()
        if held and found.stat().st_size <= limit:
            return found.read_bytes()
    except (OSError, RuntimeError):
        pass
    return None


def _run(
    box: sandbox.Box,
    files: list[dict],
    config: str,
    env: dict,
    runner: Runner,
    budget_s: float,
    limit_s: float,
    grep: str = "",
) -> dict:
    """Playwright Test on ``files`` with ``config`` in ``box``, the suite stopped after
    ``limit_s``, only the tests whose titles match ``grep`` (all when empty): the verdict the
    runner sent."""
    runner_modules, modules = furnish(box, runner)
    for entry in files:
        target = box.work / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry["contents"], encoding="utf-8")
    (box.work / "playwright.config.mjs").write_text(config)
    channel = verdict.Channel()
    limit_ms = str(max(1000, int(limit_s * 1000)))
    outcome = box.run(
        [*box.playwright_runner, modules, "playwright.config.mjs", str(runner.retries), limit_ms]
        + ([grep] if grep else []),
        env=env,
        runner=runner_modules,
        limits=sandbox.Limits.from_settings(),
        wall_s=budget_s + GRACE_S,
        verdict_fd=channel.write_fd,
    )
    if outcome.stopped == sandbox.WALL_CAP.format(limit=budget_s + GRACE_S):
        raise VerificationTimedOut(TIMED_OUT.format(budget=budget_s))
    return _verdict(box, outcome, channel)


def suite_seconds(files: list[dict], runner: Runner) -> float:
    """What the files' tests may take at most (each test's timeout, each attempt): past it, a
    test holds the suite (an endless loop blocks Playwright's own per-test timeout)."""
    tests = sum(len(spec_blocks.blocks(f["contents"])) for f in files) or 1
    return tests * runner.test_timeout_s * (runner.retries + 1) + SUITE_SLACK_S


def _verdict(box: sandbox.Box, outcome: sandbox.Outcome, channel: verdict.Channel) -> dict:
    """The JSON object the runner sent down the verdict's pipe; VerifierNotInstalled (with
    why the box was stopped, or the output's tail) when none came, ReportNotTrustworthy when
    what came is not one."""
    tail = clean(box.output_tail(TAIL_BYTES), TAIL_BYTES)
    if outcome.stopped:
        raise VerifierNotInstalled(f"{outcome.stopped}; the output ends: {tail}")
    received = channel.received()
    if not received:  # the runner ended (or was ended) before it reported
        raise VerifierNotInstalled(NO_REPORT.format(code=outcome.returncode, tail=tail))
    try:
        data = json.loads(received) if len(received) <= channel.limit else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ReportNotTrustworthy(verdict.UNTRUSTWORTHY.format(why=BAD_REPORT))
    return data


def box_json(
    box: sandbox.Box, outcome: sandbox.Outcome, name: str, limit: int, *, missing: str, bad: str
) -> dict:
    """The JSON object the box left in ``work/name``, read only when it is bounded (``limit``
    bytes); VerifierNotInstalled (with the reason the box was stopped, or the output's tail:
    ``missing`` and ``bad`` take ``{code}`` and ``{tail}``) when there is none to read."""
    found = box.work / name
    tail = clean(box.output_tail(TAIL_BYTES), TAIL_BYTES)
    if outcome.stopped:
        raise VerifierNotInstalled(f"{outcome.stopped}; the output ends: {tail}")
    if found.is_symlink() or not found.is_file():
        raise VerifierNotInstalled(missing.format(code=outcome.returncode, tail=tail))
    try:
        data = json.loads(found.read_bytes()) if found.stat().st_size <= limit else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise VerifierNotInstalled(bad.format(code=outcome.returncode, tail=tail))
    return data
