"""The VerifyTests stage through the real worker: the offline pipeline writes tests for the issue's
Flask notes service, they run against it on loopback (Playwright Test, Debian's Chromium), the
Test Engineer heals in a fresh process of the worker's agent pool, the rest is quarantined, and
the PR carries the result.
"""

import concurrent.futures
import signal
import socket
import time

import pytest
from temporalio import activity
from temporalio.worker import Interceptor

from repositories.hosts.local import LocalGitHost
from runs import selectors
from runs.demo.app import serving
from runs.models import Run
from runs.pipeline import UNEXPLORED_NOTE, UNVERIFIED_NOTE
from runs.services import run_create
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory
from tests.gitrepo import git, make_git_repo
from tests.histories import fixture_name, record_history
from tests.temporal_worker import wait_terminal
from tests.test_browser import chromium_path
from tests.verify_apps import NOTES_REPO, FailingApp, NotesApp
from tests.worker_process import start_worker, stop_worker
from verification import summary
from verification.exploration.service import NO_TARGET as NOTHING_TO_EXPLORE
from verification.verify import NO_TARGET

pytestmark = pytest.mark.django_db(transaction=True)
RUN_TIMEOUT = 150


@pytest.fixture
def evidence(settings):
    chromium_path()
    return settings.AMTP_VERIFY_EVIDENCE_DIR


@pytest.fixture
def notes_app():
    with serving(NotesApp()) as url:
        yield url


@pytest.fixture(autouse=True)
def record_histories(request):
    """`AMTP_RECORD_HISTORIES=1` writes these runs' histories beside the older ones (replayed
    by tests/test_replay.py); a history once recorded is never re-recorded."""
    yield
    name = fixture_name(request.node.name)
    for n, run in enumerate(Run.objects.order_by("created_at")):
        record_history(run, f"{name}{'_' + str(n) if n else ''}")


def notes_repo(tmp_path, **settings):
    """The notes app's repository; its stand-in runs on loopback, which it allow-lists."""
    path = make_git_repo(tmp_path / "notes", NOTES_REPO)
    settings.setdefault("allowed_hosts", ["127.0.0.1"])
    return RepositoryFactory(full_name="acme/notes", host="local", local_path=str(path), **settings)


class PoolSubmissions(Interceptor, concurrent.futures.Executor):
    """The worker's agent pool, recording (activity, function) for each task handed to it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def agent_pool(self, pool: concurrent.futures.Executor) -> concurrent.futures.Executor:
        self.pool, self.max_workers = pool, pool.max_workers
        return self

    def submit(self, fn, /, *args, **kwargs) -> concurrent.futures.Future:
        self.seen.append((activity.info().activity_type, getattr(fn, "__name__", repr(fn))))
        return self.pool.submit(fn, *args, **kwargs)


def test_tests_grounded_in_the_app_pass_first_and_a_real_bug_is_quarantined(
    tmp_path, temporal_env, evidence, notes_app
):
    """Explored first, the notes app's HTML routes (which its source hides behind jsonify)
    are tested as the pages they render, with the headings they show, and pass on their
    first attempt; the real 500 goes through a healing session in the agent pool, which
    cannot make it pass honestly, and is quarantined."""
    repo = notes_repo(tmp_path, preview_url=notes_app)
    pool = PoolSubmissions()
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2, interceptors=[pool]):
        run = wait_terminal(run_create(repository=repo, depth_level="core"), RUN_TIMEOUT)
    assert run.status == "passed", (run.error_type, run.error_message)
    explored = run.stages.get(name="explore_app")
    assert explored.status == "passed" and explored.note.startswith("3 page(s)"), explored.note
    app_map = run.artifacts.get(kind="app_map").content
    assert [p["path"] for p in app_map["pages"]] == ["/", "/api/notes", "/login"]
    assert app_map["sandbox"]["isolated"] and app_map["unknown_path_status"] == 404
    stage = run.stages.get(name="verify_tests")
    assert (stage.status, stage.note) == ("passed", "6 tests: 5 passed, 1 quarantined")
    report = run.artifacts.get(kind="verification_report")
    results = {t["title"].split(":")[0]: t for t in report.content["tests"]}
    assert {k: (t["status"], t["attempts"]) for k, t in results.items()} == {
        "tc_page_home": ("passed", 1),
        "tc_page_login": ("passed", 1),  # the source said JSON; the browser saw a page
        "tc_api_get_notes": ("passed", 1),  # exploration met its warm-up 503
        "tc_api_post_login": ("passed", 1),
        "tc_api_post_login_unknown_credentials": ("passed", 1),  # as the explored app answered
        # a real bug: an empty POST answers 500, the same way twice: not run a third time
        "tc_api_post_notes": ("quarantined", min(temporal_env.AMTP_VERIFY_RETRIES, 1) + 1),
    }
    assert "Received:   500" in results["tc_api_post_notes"]["error"]
    assert results["tc_api_post_notes"]["reason"].startswith(f"failed against {notes_app}")
    for item in results["tc_api_post_notes"]["evidence"]:
        assert (evidence / str(run.run_id) / item["path"]).is_file()
    heals = report.meta["heal_sessions"]
    assert len(heals) == 1 and heals[0]["agent"] == "test_engineer_heal"
    assert heals[0]["pid"] != report.meta["pid"], "the heal must run in a fresh process"
    assert ("VerifyTests", "heal_session") in pool.seen, "the heal must run in the agent pool"

    head = run.head_branch
    notes_spec = git(repo.local_path, "show", f"{head}:e2e/amtp/api-notes.spec.ts")
    assert "// AMTP quarantined: failed against" in notes_spec
    assert 'test.fixme("tc_api_post_notes' in notes_spec
    login_spec = git(repo.local_path, "show", f"{head}:e2e/amtp/pages-login.spec.ts")
    assert "getByRole('heading', { name: \"Sign in\", exact: true })" in login_spec
    (pull,) = LocalGitHost(repo.full_name, repo.local_path).pull_requests()
    assert "## Verification" in pull["body"] and "🚧 quarantined" in pull["body"]
    assert "**5 passed · 1 quarantined**" in pull["body"]
    first_line = summary.provenance(report.content)  # sandboxed, or the override said so
    assert pull["body"].startswith(first_line) and report.content["target_url"] in first_line
    assert (pull["draft"], pull["labels"]) == (True, ["amtp", "model-written"])
    coverage = selectors.coverage(run)  # the quarantined POST /notes does not count
    notes = next(row for row in coverage["rows"] if row["route"] == "/api/notes")
    assert [title.split(":")[0] for title in notes["tests"]] == ["tc_api_get_notes"]
    totals = coverage["totals"]
    assert f"**{totals['covered']} of {totals['routes']} routes covered**" in pull["body"]


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_an_unreachable_target_fails_the_run_unless_the_pr_may_go_unverified(
    tmp_path, worker, evidence
):
    url = closed_port_url()
    repo = notes_repo(tmp_path, preview_url=url)
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert (run.status, run.error_type) == ("failed", "TargetUnreachable")
    assert url in run.error_message and "start the app there" in run.error_message
    assert run.stages.get(name="explore_app").status == "failed"  # the first to need the app
    assert run.stages.get(name="create_pull_request").status == "skipped"

    repo.open_pr_unverified = True
    repo.save()
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert run.status == "passed", (run.error_type, run.error_message)
    for name, note in (("explore_app", UNEXPLORED_NOTE), ("verify_tests", UNVERIFIED_NOTE)):
        stage = run.stages.get(name=name)
        assert (stage.status, stage.error_type, stage.note) == ("failed", "TargetUnreachable", note)
    assert not run.artifacts.filter(kind="app_map").exists()
    report = run.artifacts.get(kind="verification_report").content
    assert report["status"] == "unverified"
    pull = LocalGitHost(repo.full_name, repo.local_path).pull_requests()[-1]
    assert pull["title"].startswith("[unverified] ") and "Unverified" in pull["body"]
    assert pull["body"].startswith("> 🤖 **The specs in this pull request were written by a model")
    assert "They were **not verified**: " in pull["body"].partition("\n")[0]


@pytest.fixture
def failing_app():
    with serving(FailingApp()) as url:
        yield url


def test_a_target_answering_only_errors_stops_the_run_before_the_pr(
    tmp_path, worker, evidence, failing_app
):
    repo = notes_repo(tmp_path, preview_url=failing_app)
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert (run.status, run.error_type) == ("failed", "TargetAnswersErrors")
    assert run.error_message.startswith("target answers errors only: ")
    assert failing_app in run.error_message
    # Stopped by ExploreApp: every page answered 500, so no test is written or run.
    assert "every page the exploration visited" in run.error_message
    assert run.stages.get(name="explore_app").status == "failed"
    assert not run.artifacts.filter(kind__in=["test_engineer_output", "app_map"]).exists()
    assert run.stages.get(name="create_pull_request").status == "skipped"
    assert LocalGitHost(repo.full_name, repo.local_path).pull_requests() == []

    repo.open_pr_unverified = True
    repo.save()
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert run.status == "passed", (run.error_type, run.error_message)
    stage = run.stages.get(name="explore_app")
    assert (stage.error_type, stage.note) == ("TargetAnswersErrors", UNEXPLORED_NOTE)
    stage = run.stages.get(name="verify_tests")
    assert (stage.error_type, stage.note) == ("TargetAnswersErrors", UNVERIFIED_NOTE)
    report = run.artifacts.get(kind="verification_report").content
    assert report["status"] == "unverified" and report["totals"]["quarantined"] == 0
    (pull,) = LocalGitHost(repo.full_name, repo.local_path).pull_requests()
    assert pull["title"].startswith("[unverified] ")
    assert "target answers errors only" in pull["body"]
    files = [
        git(repo.local_path, "show", f"{run.head_branch}:{f['path']}") for f in report["files"]
    ]
    assert not any("test.fixme" in f and "AMTP quarantined" in f for f in files)


def test_a_run_target_url_overrides_the_repository_and_none_skips(tmp_path, worker, evidence):
    repo = notes_repo(tmp_path)
    run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
    assert run.status == "passed"
    stage = run.stages.get(name="verify_tests")
    assert (stage.status, stage.note) == ("skipped", NO_TARGET)
    stage = run.stages.get(name="explore_app")
    assert (stage.status, stage.note) == ("skipped", NOTHING_TO_EXPLORE)
    url = closed_port_url()
    run = wait_terminal(run_create(repository=repo, depth_level="smoke", target_url=url))
    assert (run.status, run.target_url, run.error_type) == ("failed", url, "TargetUnreachable")


def test_a_worker_stopped_by_sigterm_to_its_process_group_exits_cleanly(
    tmp_path, temporal_env, evidence, notes_app
):
    """What a supervisor does (systemd's control-group kill, run_system's stop): every process
    of the worker's group gets SIGTERM, its children first here. VerifyTests ran in the agent
    pool, so the worker's shutdown signals the heartbeat channel's process: that process
    outlives the signal and the worker exits 0, without a traceback (a BrokenPipeError
    surfacing as a CancelledError would mean the channel died first)."""
    import psutil  # pgserver's dependency

    log = tmp_path / "worker.log"
    worker = start_worker(log, temporal_env.TEMPORAL_TASK_QUEUE, processes=1)
    try:
        repo = notes_repo(tmp_path, preview_url=notes_app)
        run = wait_terminal(run_create(repository=repo, depth_level="smoke"), RUN_TIMEOUT)
        assert run.stages.get(name="verify_tests").status == "passed"  # it ran in the pool
        for child in psutil.Process(worker.pid).children(recursive=True):
            child.send_signal(signal.SIGTERM)
        time.sleep(1)
    finally:
        stop_worker(worker)
    assert worker.returncode == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()
