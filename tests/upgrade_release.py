"""An upgrade from the newest release (tests/fixtures/releases.txt) to this tree, with runs in
flight: the mechanics shared by tests/test_upgrade_release.py and scripts/upgrade_drill.py.

Before the upgrade, everything is the release's own code: its tree, taken from git history
(``git archive``) into a folder, builds a fresh database (``manage.py migrate``), runs its
worker (``manage.py run_worker``, in a process group of its own) on a task queue of its own,
and creates the repositories and runs through its services (tests/upgrade_steps.py). Per
set, three repositories on the fake GitHub and four runs:

- ``held``: the repository's branch protection refused the run's branch: held for approval;
- ``writing``: its CreatePullRequest is in progress, its ``POST /pulls`` held by the fake
  GitHub (the repository's PR lock held meanwhile); GitHub carries it out once the worker is
  gone, so the pull request exists, unrecorded, after the upgrade;
- ``waiting``: on the same repository, which runs one run at a time: waiting for its slot;
- ``submitted``: created once the worker is gone (the upgrade window): only in ``run_starts``;
- ``checked`` (in ``checks``, not ``runs``): a fork's pull request check run, held before any
  of its code runs; on the release it shows nothing on GitHub while it waits.

Then that worker's process group is SIGKILLed. After: this tree migrates the same database,
its worker takes over the task queue, the operator lifts the protection and approves the held
run through this tree's service, and rejects the held check run, which must then end failed
with its rejection shown on the pull request (a completed check run). Every run must end ``passed`` with exactly one pull request
(:func:`Upgrade.problems` lists what does not hold).

Both trees use this virtualenv: an upgrade whose requirements change needs a virtualenv of
the release's own (not built here yet). The runs need no browser (no preview URL: VerifyTests
is skipped), so the release's tree needs no ``infra/playwright/node_modules``.
"""

from __future__ import annotations

import asyncio
import io
import re
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from runs.checks import REJECTED_TITLE
from tests.fakes.github_api import FakeGitHub, Held
from tests.samples import DEMO_WEB
from tests.worker_process import kill_worker, start_worker, stop_worker

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ROOT / "tests" / "fixtures" / "releases.txt"
STEPS = Path(__file__).with_name("upgrade_steps.py")
OPEN_RUNS = "SELECT run_id FROM runs WHERE run_id = ANY(%s) AND status IN ('pending', 'running')"
CLOSED = ("COMPLETED", "FAILED", "CANCELED", "TERMINATED", "CONTINUED_AS_NEW", "TIMED_OUT")
PENDING = "SELECT 1 FROM approvals WHERE run_id = %s AND decision = 'pending'"
VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
COMMIT = re.compile(r"[0-9a-f]{40}")
RELEASE_LINE = "expected '<major>.<minor>.<patch> <the full 40-hex commit id>'"
NO_COMMIT = (
    "release {version}'s commit {commit} (tests/fixtures/releases.txt) is not in this "
    "checkout (a shallow clone?): fetch the full history (git fetch --unshallow --tags), then "
    "run the upgrade test again"
)
# Short retries, heartbeat and bookkeeping timeouts: a killed worker's activities (a stage,
# or the waiting run's try for its slot) are retried seconds later, not after a minute.
FAST = {
    "AMTP_LLM_PROVIDER": "offline",
    "AMTP_BOOT_APPS": "false",
    "AMTP_HEARTBEAT_TIMEOUT_S": "5",
    "AMTP_BOOKKEEPING_TIMEOUT_S": "5",
    "AMTP_RETRY_INITIAL_S": "0.2",
    "AMTP_RETRY_MAX_INTERVAL_S": "1",
    "GITHUB_SECONDS_BETWEEN_WRITES": "0",
    "DJANGO_DEBUG": "true",
}


def releases(text: str) -> list[tuple[str, str]]:
    """The releases file's (version, commit) lines, or ValueError naming the line and the
    rule: ``<major>.<minor>.<patch> <40-hex commit id>``, versions rising (oldest first)."""
    found: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2 or not VERSION.fullmatch(fields[0]) or not COMMIT.fullmatch(fields[1]):
            raise ValueError(f"{RELEASES.name} line {number}: {RELEASE_LINE}, not {line!r}")
        if found and _numbers(fields[0]) <= _numbers(found[-1][0]):
            raise ValueError(
                f"{RELEASES.name} line {number}: {fields[0]} is not after {found[-1][0]} "
                "(oldest first)"
            )
        found.append((fields[0], fields[1]))
    if not found:
        raise ValueError(f"{RELEASES.name} names no release")
    return found


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def newest_release() -> tuple[str, str]:
    """(version, commit) of the releases file's last line."""
    return releases(RELEASES.read_text())[-1]


def release_tree(version: str, commit: str, into: Path) -> Path:
    """The release's files at ``commit`` (as committed: no virtualenv, no node_modules), or
    LookupError saying to fetch the history."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
    )
    if found.returncode != 0:
        raise LookupError(NO_COMMIT.format(version=version, commit=commit))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit], capture_output=True, check=True
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


@contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """A new, empty database on the PostgreSQL server of ``server_url``; its URL. Dropped after."""
    url = urlsplit(server_url)
    name = f"amtp_upgrade_{uuid.uuid4().hex[:12]}"
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield url._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@dataclass
class Upgrade:
    release: Path  # the release's tree
    env: dict[str, str]  # both trees' processes: the services, the task queue, FAST
    github: FakeGitHub
    logs: Path
    sets: int = 1
    runs: dict[str, str] = field(default_factory=dict)  # "<role>-<set>" -> run id
    checks: dict[str, str] = field(default_factory=dict)  # "checked-<set>" -> run id
    holds: list[Held] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    heads: dict[int, str] = field(default_factory=dict)  # the checked repositories' main SHA
    _checked: float = 0.0  # when the workflows were last asked about

    # -- the two trees' processes -----------------------------------------------------------
    def step(self, root: Path, *args: str) -> str:
        """tests/upgrade_steps.py in ``root``'s tree; what it printed."""
        done = subprocess.run(
            [sys.executable, "-c", STEPS.read_text(), *args],
            cwd=root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if done.returncode != 0:
            raise AssertionError(f"{args} in {root} failed: {done.stderr[-4000:]}")
        return done.stdout.strip()

    def migrate(self, root: Path) -> None:
        started = time.monotonic()
        self.manage(root, "migrate", "--no-input")
        self.timings[f"migrate {root.name}"] = time.monotonic() - started

    def manage(self, root: Path, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise AssertionError(f"manage.py {args} in {root} failed: {done.stderr[-4000:]}")

    def worker(self, root: Path, name: str) -> subprocess.Popen:
        return start_worker(
            self.logs / f"{name}.log", self.env["TEMPORAL_TASK_QUEUE"], root=root, env=self.env
        )

    def log_tail(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in self.logs.glob("*.log"))

    # -- PostgreSQL, read directly (the spec's tables) --------------------------------------
    def rows(self, query: str, *params) -> list[tuple]:
        with psycopg.connect(self.env["DATABASE_URL"]) as conn:
            return conn.execute(query, params).fetchall()

    def wait(self, what: str, predicate: Callable[[], object], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                states = self.rows("SELECT run_id, status, error_type, error_message FROM runs")
                raise AssertionError(f"timed out waiting for {what}: {states}\n{self.log_tail()}")
            time.sleep(0.25)

    def stage(self, run_id: str, name: str) -> tuple[str, str]:
        [found] = self.rows(
            "SELECT status, error_type FROM stages WHERE run_id = %s AND name = %s", run_id, name
        )
        return found

    # -- before: the release's worker, runs in flight, killed -------------------------------
    def repo(self, role: str, n: int) -> str:
        return f"acme/{role}-{n}"

    def before(self) -> None:
        """Runs in flight on the release, then its worker's process group SIGKILLed."""
        started = time.monotonic()
        for n in range(self.sets):
            for role, limit in (("held", 2), ("writing", 1), ("submitted", 2)):
                self.github.create_repo(self.repo(role, n), DEMO_WEB)
                self.step(self.release, "repository", self.repo(role, n), str(limit))
            self.github.protect(self.repo("held", n), "amtp/*")
            self.heads[n] = self.github.create_repo(self.repo("checked", n), DEMO_WEB)
            self.step(self.release, "repository", self.repo("checked", n), "1")
        old = self.worker(self.release, "release-worker")
        try:
            self._in_flight()
        finally:
            kill_worker(old)  # the upgrade, as abrupt as it gets: no goodbye
        for held in self.holds:
            held.release()  # GitHub carries out the write whose client is gone
        for n in range(self.sets):  # submitted while no worker runs
            self.runs[f"submitted-{n}"] = self.step(self.release, "run", self.repo("submitted", n))
        self.timings["runs in flight on the release in"] = time.monotonic() - started

    def _in_flight(self) -> None:
        """Each kind of run in every set at once, then waited for until in its place."""
        for n in range(self.sets):
            self.runs[f"held-{n}"] = self.step(self.release, "run", self.repo("held", n))
            checked = (self.repo("checked", n), self.heads[n])
            self.checks[f"checked-{n}"] = self.step(self.release, "check", *checked)
        for n in range(self.sets):
            repo = self.repo("writing", n)
            self.holds.append(self.github.hold("POST", f"/repos/{repo}/pulls$"))
            self.runs[f"writing-{n}"] = self.step(self.release, "run", repo)
        for n in range(self.sets):
            for run_id in (self.runs[f"held-{n}"], self.checks[f"checked-{n}"]):
                self.wait(f"run {run_id} held", lambda r=run_id: self.rows(PENDING, r), 240)
        for n, held in enumerate(self.holds):
            self.wait(f"{self.repo('writing', n)}'s POST /pulls", held.arrived.is_set, 240)
        for n in range(self.sets):
            self.runs[f"waiting-{n}"] = self.step(self.release, "run", self.repo("writing", n))
        for n in range(self.sets):
            run_id = self.runs[f"waiting-{n}"]
            self.wait(
                f"run {run_id} waiting for a slot",
                lambda r=run_id: self.stage(r, "crawl_repo")[1] == "RepoConcurrencyLimited",
                120,
            )

    # -- after: this tree migrates, its worker finishes the runs ----------------------------
    def after(self, timeout: float = 180) -> None:
        started = time.monotonic()
        self.migrate(ROOT)
        new = self.worker(ROOT, "worker")
        try:
            for n in range(self.sets):
                self.github.repo(self.repo("held", n)).protections.clear()  # the operator's fix
                self.step(ROOT, "approve", self.runs[f"held-{n}"])
                self.step(ROOT, "reject", self.checks[f"checked-{n}"])
            self.wait("every run to end", self._ended, timeout)
            self.timings["after the upgrade, every run ended in"] = time.monotonic() - started
        finally:
            stop_worker(new)

    def _ended(self) -> bool:
        """Every run ended; an AssertionError at once when a run's workflow closed first (the
        new worker could not replay it: the release's histories are not kept)."""
        open_ = [str(r) for (r,) in self.rows(OPEN_RUNS, self.run_ids())]
        if open_ and time.monotonic() - self._checked > 2:
            self._checked = time.monotonic()
            statuses = self.workflows()
            if closed := {r: statuses[r] for r in open_ if statuses[r] in CLOSED}:
                raise AssertionError(
                    f"workflows closed, their runs still open: {closed}\n{self.log_tail()}"
                )
        return not open_

    def run_ids(self) -> list[str]:
        return [*self.runs.values(), *self.checks.values()]

    def github_repos(self) -> list[str]:
        return [
            self.repo(role, n)
            for n in range(self.sets)
            for role in ("held", "writing", "submitted")
        ]

    def workflows(self) -> dict[str, str]:
        """Each run's workflow status in Temporal."""

        async def describe() -> dict[str, str]:
            client = await Client.connect(self.env["TEMPORAL_ADDRESS"])
            found = {}
            for run_id in self.run_ids():
                try:
                    status = (await client.get_workflow_handle(run_id).describe()).status.name
                except RPCError as err:  # not started yet (a run still in run_starts)
                    if err.status != RPCStatusCode.NOT_FOUND:
                        raise
                    status = "NOT_STARTED"
                found[run_id] = status
            return found

        return asyncio.run(describe())

    # -- what must hold -----------------------------------------------------------------------
    def problems(self, valkey) -> list[str]:
        """Every broken promise: a run not passed, a missing or second pull request, a PR not
        the run's, a pending approval, a slot or PR lock left in Valkey (``valkey``: a client
        on the Valkey DB of the runs)."""
        found = []
        by_id = {
            str(run_id): (status, error, number)
            for run_id, status, error, number in self.rows(
                "SELECT run_id, status, error_type || ': ' || error_message, pr_number FROM runs"
            )
        }
        for key, run_id in self.runs.items():
            status, error, number = by_id[run_id]
            if status != "passed":
                found.append(f"{key} run {run_id} ended {status}: {error}")
            role, n = key.rsplit("-", 1)
            repo = self.repo("writing" if role == "waiting" else role, int(n))
            heads = [p["number"] for p in self.github.pulls(repo) if run_id in p["head"]["ref"]]
            if heads != [number]:
                found.append(f"{key} run {run_id}: PR {number} recorded, {heads} on GitHub")
        pulls = sum(len(self.github.pulls(repo)) for repo in self.github_repos())
        if pulls != len(self.runs):
            found.append(f"{pulls} pull requests on GitHub for {len(self.runs)} runs")
        workflows = self.workflows()
        found += self.check_problems(by_id, workflows)
        for run_id in self.runs.values():
            if workflows[run_id] != "COMPLETED":
                found.append(f"run {run_id}'s workflow is {workflows[run_id]}")
        if pending := self.rows("SELECT run_id FROM approvals WHERE decision = 'pending'"):
            found.append(f"approvals still pending: {pending}")
        for key in valkey.scan_iter("amtp:rl:repo:*"):
            name = key.decode()
            if name.endswith(":pr_lock") or (name.endswith(":running") and valkey.zcard(key)):
                found.append(f"left in Valkey: {name}")
        return found

    def check_problems(self, by_id: dict, workflows: dict) -> list[str]:
        """A held check run rejected after the upgrade: failed on the rejection (its workflow
        too), which its pull request shows (one check run, completed), though the release
        showed no hold."""
        found = []
        for key, run_id in self.checks.items():
            status, error, _ = by_id[run_id]
            if (status, error.split(":")[0], workflows[run_id]) != (
                "failed",
                "ApprovalRejected",
                "FAILED",
            ):
                found.append(f"{key} run {run_id} ended {status} ({workflows[run_id]}): {error}")
            shown = [
                (c["external_id"], c["status"], c["output"]["title"])
                for c in self.github.check_runs(self.repo("checked", int(key.rsplit("-")[-1])))
            ]
            if shown != [(run_id, "completed", REJECTED_TITLE)]:
                found.append(f"{key} run {run_id}: check runs on GitHub {shown}")
        return found
