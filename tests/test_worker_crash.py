"""Crash recovery: a dead agent process or a killed worker never duplicates work."""

import re
import time

import pytest

from repositories.hosts.local import LocalGitHost
from runs.pull_requests import head_branch_for
from runs.services import run_create
from runs.temporal import types as t
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory
from tests.faults import Fault, FaultOnce
from tests.gitrepo import git, make_git_repo
from tests.samples import DEMO_WEB
from tests.temporal_worker import wait_terminal, worker_setting
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)
from tests.worker_process import kill_worker, start_worker, stop_worker

pytestmark = pytest.mark.django_db(transaction=True)
KINDS = (
    "repo_crawler_output",
    "test_case_generator_output",
    "test_engineer_output",
    "verification_report",
    "pull_request",
)


def llm_calls(log: str, agent: str) -> int:
    return len(re.findall(rf"LLM call \d+ for {agent} ", log))


def assert_exactly_one_of_everything(run, repo):
    assert run.status == "passed", (run.error_type, run.error_message)
    assert sorted(run.artifacts.values_list("kind", flat=True)) == sorted(KINDS)
    assert git(repo.local_path, "branch", "--list", "amtp/*").count("amtp/run-") == 1


def start_then_kill(
    tmp_path, queue: str, repo, spec: str, marker, processes: int = 1, **run_fields
):
    """A run of ``repo`` (``run_fields``; default: a smoke generation run) started on a worker
    process with the interceptor ``spec`` (tests/worker_process.py), that worker killed with
    its process group once ``marker`` exists (the fault fired)."""
    first = start_worker(tmp_path / "w1.log", queue, spec, processes=processes)
    try:
        run = run_create(repository=repo, **(run_fields or {"depth_level": "smoke"}))
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), (tmp_path / "w1.log").read_text()[-3000:]
    finally:
        kill_worker(first)  # the worker and its agent processes, no goodbye
    return run


def finish_on_a_second_worker(tmp_path, queue: str, run, *specs: str, processes: int = 1):
    second = start_worker(tmp_path / "w2.log", queue, *specs, processes=processes)
    try:
        return wait_terminal(run, timeout=90)
    finally:
        stop_worker(second)


def run_past_a_worker_fault(tmp_path, queue: str, repo, fault: str, marker):
    """A run through a worker process with ``fault`` (tests/faults.py), killed once it fired,
    then finished by a second worker. The run and both workers' logs."""
    run = start_then_kill(tmp_path, queue, repo, fault, marker)
    run = finish_on_a_second_worker(tmp_path, queue, run, fault)
    return run, (tmp_path / "w1.log").read_text() + (tmp_path / "w2.log").read_text()


def test_agent_process_dying_is_retried_in_a_fresh_process_and_stored_once(
    tmp_path, temporal_env, capfd
):
    marker = tmp_path / "crashed"
    # The agent process has its test cases, then dies (os._exit) before handing them over.
    crash = FaultOnce(Fault(t.GENERATE_TEST_CASES, "crash", str(marker)))
    repo = RepositoryFactory(
        full_name="acme/web", host="local", local_path=make_git_repo(tmp_path / "web", DEMO_WEB)
    )
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=2, interceptors=[crash]) as worker:
        run = wait_terminal(run_create(repository=repo, depth_level="smoke"))
    assert marker.exists(), "the fault was not injected"
    assert_exactly_one_of_everything(run, repo)
    stage = run.stages.get(name="generate_test_cases")
    assert stage.attempts == 2
    artifact = run.artifacts.get(kind="test_case_generator_output")
    # Nothing of the dead process was stored: the retry's process asked the model again.
    assert artifact.meta["pid"] != int(marker.read_text())
    assert llm_calls(capfd.readouterr().err, "test_case_generator") == 2
    assert worker.pool.respawns >= 1  # the broken pool was replaced, the worker kept going


def test_worker_killed_mid_activity_then_restarted_completes_the_run(
    tmp_path, temporal_env, settings, monkeypatch
):
    # The dead worker's agent stops heartbeating: Temporal retries after the heartbeat timeout,
    # long before the start-to-close timeout.
    worker_setting(settings, monkeypatch, "AMTP_HEARTBEAT_TIMEOUT_S", 6)
    worker_setting(settings, monkeypatch, "AMTP_AGENT_ACTIVITY_TIMEOUT_S", 600)
    marker = tmp_path / "hanging"
    # The first worker stores the test cases, then hangs until killed, before reporting them.
    fault = f"fault:{t.GENERATE_TEST_CASES}:hang:{marker}"
    queue = settings.TEMPORAL_TASK_QUEUE
    repo = RepositoryFactory(
        full_name="acme/web", host="local", local_path=make_git_repo(tmp_path / "web", DEMO_WEB)
    )
    run, logs = run_past_a_worker_fault(tmp_path, queue, repo, fault, marker)
    assert_exactly_one_of_everything(run, repo)
    crawl = run.artifacts.get(kind="repo_crawler_output")
    assert llm_calls(logs, "repo_crawler") == crawl.meta["llm_calls"]  # finished before the kill
    assert llm_calls(logs, "test_case_generator") == 1  # persisted before the kill: reused
    assert llm_calls(logs, "test_engineer") == 1
    assert run.stages.get(name="generate_test_cases").attempts == 2


def test_worker_killed_after_writing_the_pull_request_adopts_it(
    tmp_path, temporal_env, settings, monkeypatch
):
    """R3: the branch and the PR are written, CreatePullRequest has not completed, and the
    worker's process group is SIGKILLed: the retry, on a new worker, adopts that PR."""
    worker_setting(settings, monkeypatch, "AMTP_HEARTBEAT_TIMEOUT_S", 5)  # then a retry
    marker = tmp_path / "written"
    queue = settings.TEMPORAL_TASK_QUEUE
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    repo = RepositoryFactory(full_name="acme/web", host="local", local_path=path)
    slow = f"slow:{t.CREATE_PULL_REQUEST}:600:{marker}"  # written, then it holds
    run = start_then_kill(tmp_path, queue, repo, slow, marker, processes=2)
    host = LocalGitHost(repo.full_name, path)
    assert [p["head_branch"] for p in host.pull_requests()] == [head_branch_for(run)]
    assert not run.artifacts.filter(kind="pull_request").exists()  # not recorded: killed first
    killed = time.monotonic()
    run = finish_on_a_second_worker(tmp_path, queue, run, processes=2)
    print(f"R3: {run.status} {time.monotonic() - killed:.1f} s after the kill")
    assert_exactly_one_of_everything(run, repo)
    assert len(host.pull_requests()) == 1
    assert run.artifacts.get(kind="pull_request").content["adopted"] is True
    assert run.stages.get(name="create_pull_request").attempts == 2
