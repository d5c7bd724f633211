"""BootApp through the real worker: a run with neither a target URL nor a preview boots its
repository's app (a small Node app, its recipe found in package.json) in the sandbox, explores
and verifies against it, and leaves no app process behind; an app that does not start fails
the run naming its command and log, or, where the repository opens PRs unverified, the run
goes on without a live app and the PR's first line says why."""

import contextlib
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from repositories.hosts.local import LocalGitHost
from runs.services import run_cancel, run_create
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.temporal_worker import wait_for, wait_terminal
from tests.test_browser import chromium_path
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)
from tests.worker_process import kill_worker, start_worker
from verification import sandbox

pytestmark = pytest.mark.django_db(transaction=True)
RUN_TIMEOUT = 180
# The app's file: its processes are found by it. One name per test process, so another
# pytest-xdist worker's app running at the same moment is never counted as this test's.
MARKER = f"boot-e2e-{uuid.uuid4().hex[:12]}.js"
SERVER = """const http = require('http');
const pages = {
  '/': '<h1>Tiny shop</h1><a href="/about">About us</a>',
  '/about': '<h1>About us</h1><p>We sell tiny things.</p><a href="/">Home</a>',
};
http.createServer((req, res) => {
  const page = pages[req.url.split('?')[0]];
  res.writeHead(page ? 200 : 404, { 'content-type': 'text/html' });
  res.end(`<!doctype html><html><head><title>Tiny shop</title></head><body>${page || '<h1>Not found</h1>'}</body></html>`);
}).listen(Number(process.env.PORT || 3000));
"""


@pytest.fixture
def booting(settings, tmp_path, monkeypatch):
    settings.AMTP_BOOT_APPS = True
    settings.AMTP_BOOT_CACHE_DIR = tmp_path / "boot-cache"
    settings.AMTP_BOOT_READY_TIMEOUT_S = 30.0
    chromium_path()


def _repo(tmp_path, start: str, server: str = SERVER, **fields):
    package = json.dumps({"name": "tiny-shop", "private": True, "scripts": {"start": start}})
    path = make_git_repo(tmp_path / "shop", {"package.json": package, MARKER: server})
    return RepositoryFactory(full_name="acme/shop", host="local", local_path=path, **fields)


def _app_processes() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if MARKER.encode() in command:
            found.append(pid)
    return found


def test_a_run_without_a_target_boots_its_app_and_runs_against_it(tmp_path, worker, booting):
    repo = _repo(tmp_path, f"node {MARKER}")
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert run.status == "passed", (run.error_type, run.error_message)
    stages = {s.name: s for s in run.stages.all()}
    boot = stages["boot_app"]
    assert boot.status == "passed" and boot.note.startswith("from package.json"), boot.note
    content = run.artifacts.get(kind="app_boot").content
    assert content["status"] == "booted" and content["recipe"]["start"] == "npm run start"
    assert content["boot_s"] > 0 and isinstance(content["log_tail"], str)
    assert stages["explore_app"].status == "passed", stages["explore_app"].note
    app_map = run.artifacts.get(kind="app_map").content
    assert app_map["target_url"].startswith("http://127.0.0.1:")
    assert {"/", "/about"} <= {page["path"] for page in app_map["pages"]}
    report = run.artifacts.get(kind="verification_report").content
    assert report["status"] == "verified", report.get("reason")
    assert report["target_url"].startswith("http://127.0.0.1:")
    assert _app_processes() == []


def test_an_app_that_does_not_start_fails_the_run_unless_prs_may_go_unverified(
    tmp_path, worker, booting
):
    repo = _repo(tmp_path, "node missing.js")
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert (run.status, run.error_type) == ("failed", "AppExited")
    assert "start command `npm run start` (exit code 1)" in run.error_message
    assert "Cannot find module" in run.error_message  # the log's last lines
    assert run.stages.get(name="boot_app").status == "failed"

    repo.open_pr_unverified = True
    repo.save()
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert run.status == "passed", (run.error_type, run.error_message)
    stages = {s.name: s for s in run.stages.all()}
    assert (stages["boot_app"].status, stages["boot_app"].error_type) == ("failed", "AppExited")
    assert stages["explore_app"].status == "skipped"
    assert stages["explore_app"].note.startswith("the app did not boot (AppExited)")
    assert stages["verify_tests"].status == "skipped"
    pull = LocalGitHost(repo.full_name, repo.local_path).pull_requests()[-1]
    first_line = pull["body"].partition("\n")[0]
    assert "the app did not boot (AppExited)" in first_line
    assert _app_processes() == []


def _until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_cancel_during_verify_tests_leaves_no_app_behind(tmp_path, worker, booting):
    repo = _repo(tmp_path, f"node {MARKER}")
    run = run_create(repository=repo, depth_level="smoke")
    wait_for(run, lambda r: r.stages.get(name="verify_tests").status == "running", RUN_TIMEOUT)
    _until(_app_processes, 60, "VerifyTests' app")  # booted for the stage, up
    run_cancel(run=run)
    run = wait_terminal(run, 60)
    assert run.status == "cancelled"
    _until(lambda: not _app_processes(), 10, "the app to be gone")
    # Its box, and the tests' box, once the stage's execution (without an app now) ends.
    _until(lambda: not _boxes_of(os.getpid()), 60, "the boxes to be removed")


# Answers 503 ("warming up") for a minute: BootApp waits for it, and the worker is killed then.
SLOW_SERVER = """const http = require('http');
const up = Date.now() + 60000;
http.createServer((req, res) => {
  res.writeHead(Date.now() < up ? 503 : 200, { 'content-type': 'text/html' });
  res.end('<!doctype html><h1>Warming up</h1>');
}).listen(Number(process.env.PORT || 3000));
"""


def test_a_worker_killed_during_boot_app_leaves_no_app_behind(
    tmp_path, temporal_env, booting, monkeypatch
):
    for name in ("AMTP_BOOT_APPS", "AMTP_BOOT_CACHE_DIR", "AMTP_BOOT_READY_TIMEOUT_S"):
        monkeypatch.setenv(name, str(getattr(temporal_env, name)).lower())
    monkeypatch.setenv("AMTP_BOOT_READY_TIMEOUT_S", "90")
    repo = _repo(tmp_path, f"node {MARKER}", server=SLOW_SERVER)
    log = tmp_path / "worker.log"
    process = start_worker(log, temporal_env.TEMPORAL_TASK_QUEUE)
    try:
        run = run_create(repository=repo, depth_level="smoke")
        _until(_app_processes, 90, "the app booting")  # BootApp waits for it to be ready
        assert run.stages.get(name="boot_app").status == "running", log.read_text()[-2000:]
    finally:
        kill_worker(process)  # the worker's process group; the box is in a session of its own
    _until(lambda: not _app_processes(), 10, "the app to die with its worker")
    # Its box's folder, tmpfs and cgroup stay: the next worker to start sweeps them.
    left = _boxes_of(process.pid)
    assert left, "the killed worker's box is expected on disk until a sweep"
    assert set(left) <= set(sandbox.sweep()) and not _boxes_of(process.pid)


def _boxes_of(pid: int) -> list[Path]:
    """The box folders the process ``pid`` made (their owner file names it)."""
    found = []
    for root in Path(tempfile.gettempdir()).glob(sandbox.PREFIX + "*"):
        with contextlib.suppress(OSError, IndexError):
            if (root / sandbox.OWNER).read_text().split()[0] == str(pid):
                found.append(root)
    return found
