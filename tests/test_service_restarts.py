"""A run survives a restart of PostgreSQL, Valkey or Temporal in the middle of it.

Each test stops the real server (the postmaster by SIGINT, Valkey and Temporal by SIGKILL)
while a run is in flight, holds the outage longer than the agents' retry budget where the
retries are bookkeeping's, starts it again with ``manage.py devstack up`` (same port) and
expects the run to pass with one PR. The worker runs in this process and read the addresses
when it started, as ``manage.py run_worker`` does; this thread's own database connection dies
with PostgreSQL and is replaced the way each web request does it (``close_old_connections``
with health checks). PostgreSQL and Valkey are the suite's own servers (``.devstack/test``),
so their tests bring them back before they end; Temporal gets a scratch server of its own.
``scripts/restart_drill.py`` is the long version (run_system, four runs, 30 s outages).
The last test (R4) loses the pr_lock while a run holds it: Valkey killed and started again,
or FLUSHALL.
"""

import asyncio
import json
import os
import signal
import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.db import close_old_connections
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, Interceptor

from amtp_site import devstack
from amtp_site import valkey as valkey_mod
from amtp_site.devstack.base import RESTARTED
from amtp_site.temporal import connect
from repositories.hosts.local import LocalGitHost
from runs import transitions
from runs.pull_requests import head_branch_for
from runs.services import run_create
from runs.temporal import types as t
from runs.temporal.worker_thread import WorkerThread
from tests.devstack_cli import alive, manage
from tests.gitrepo import git
from tests.histories import record_history
from tests.samples import DEMO_WEB
from tests.slow_host import SlowDown
from tests.temporal_worker import FAST_RETRY, wait_terminal
from tests.test_workflow import local_repo

pytestmark = pytest.mark.django_db(transaction=True)
# Tests that stop or flush the shared PostgreSQL or Valkey are `serial`: `make test` runs them
# alone. The Temporal one restarts a server of its own.
EXTERNAL = devstack.external_services()  # read before the fixtures point children at the test DB


class Pause(Interceptor):
    """Holds the first attempt of one activity until ``release`` is set; counts attempts."""

    def __init__(self, activity_type: str) -> None:
        self.activity_type = activity_type
        self.reached, self.release = threading.Event(), threading.Event()
        self.attempts = 0

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _PauseInbound(next, self)


class _PauseInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, pause: Pause) -> None:
        super().__init__(next)
        self.pause = pause

    async def execute_activity(self, input):
        if activity.info().activity_type == self.pause.activity_type:
            self.pause.attempts += 1
            self.pause.reached.set()
            while not self.pause.release.is_set():
                await asyncio.sleep(0.05)
        return await super().execute_activity(input)


def kill_and_wait(pid: int, sig: signal.Signals) -> None:
    os.kill(pid, sig)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), f"pid {pid} survived {sig.name}"


def up_again(stack_dir, service: str, port: int) -> None:
    """``manage.py devstack up <service>``: back on the port every client already knows."""
    result = manage(stack_dir, "up", service)
    assert result.returncode == 0, result.stderr
    assert RESTARTED.format(service=service, port=port) in result.stderr, result.stderr
    assert json.loads((stack_dir / "state.json").read_text())[service]["port"] == port


def assert_passed_with_one_pr(run, repo) -> None:
    assert run.status == "passed", (run.error_type, run.error_message)
    stages = dict(run.stages.values_list("name", "status"))
    # No target URL (and BootApp off in the suite): nothing to boot, explore or verify against.
    skipped = (stages.pop("boot_app"), stages.pop("explore_app"), stages.pop("verify_tests"))
    assert skipped == ("skipped", "skipped", "skipped")
    assert set(stages.values()) == {"passed"}
    assert run.artifacts.filter(kind="pull_request").count() == 1
    assert git(repo.local_path, "branch", "--list", "amtp/*").count("amtp/run-") == 1


def workflow_result(run) -> str:
    """The workflow's own result: it returns once its last activity (releasing the slot)
    completed, so every bookkeeping write went through after the restart."""

    async def result():
        client = await connect()
        return await client.get_workflow_handle(str(run.run_id)).result()

    return async_to_sync(result)()


def agent_retries(settings, attempts: int) -> None:
    """Agent stages keep the retry policy's attempt cap; bookkeeping's has none."""
    settings.AMTP_RETRY_POLICY = {**settings.AMTP_RETRY_POLICY, **FAST_RETRY}
    settings.AMTP_RETRY_POLICY["maximum_attempts"] = attempts


@pytest.mark.serial
@pytest.mark.skipif("postgres" in EXTERNAL, reason="DATABASE_URL is external")
@pytest.mark.skipif(
    bool(os.environ.get("AMTP_TEST_DATABASE_NAME")),
    reason="the server is shared with other test sessions: stopping it would fail theirs",
)
def test_postgres_stopped_before_the_final_write_then_started_again(
    request, tmp_path, temporal_env, monkeypatch
):
    """The PR is open; PostgreSQL is stopped just before EndRun marks the run passed. EndRun
    (mark passed, give the slot back) keeps retrying for as long as the outage lasts."""
    pause = Pause(t.END_RUN)
    pause.release.set()  # counts its attempts only
    final_write, go_on = threading.Event(), threading.Event()
    end = transitions._end

    def held_first_time(run_id, status, failure):
        if not final_write.is_set():
            final_write.set()
            go_on.wait(120)
        return end(run_id, status, failure)

    monkeypatch.setattr(transitions, "_end", held_first_time)
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    state = devstack.read_state()["postgres"]
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2, interceptors=[pause]):
        run = run_create(repository=repo, depth_level="smoke")
        assert final_write.wait(120), "the run never reached its final write"
        try:
            kill_and_wait(devstack.postgres.pid(), signal.SIGINT)  # the PR is open by now
            go_on.set()
            # Down for longer than the agents' whole budget (4 attempts, < 2 s): the final
            # write keeps retrying, at most a second apart.
            deadline = time.monotonic() + 60
            while pause.attempts <= FAST_RETRY["maximum_attempts"] + 1:
                assert time.monotonic() < deadline, f"{pause.attempts} attempts"
                time.sleep(0.2)
        finally:
            go_on.set()
            up_again(devstack.STACK_DIR, "postgres", state["port"])
            close_old_connections()  # this thread's connection died with the server
        run = wait_terminal(run, timeout=60)
        assert workflow_result(run) == "passed"
        record_history(run, request.node.name)
    assert_passed_with_one_pr(run, repo)


@pytest.mark.serial
@pytest.mark.skipif("valkey" in EXTERNAL, reason="VALKEY_URL is external")
def test_valkey_killed_before_the_pull_request_then_started_again(request, tmp_path, temporal_env):
    agent_retries(temporal_env, 60)  # about a minute of attempts, a second apart
    pause = Pause(t.CREATE_PULL_REQUEST)
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    state = devstack.read_state()["valkey"]
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2, interceptors=[pause]):
        run = run_create(repository=repo, depth_level="smoke")
        assert pause.reached.wait(120), "the run never reached CreatePullRequest"
        try:
            kill_and_wait(state["pid"], signal.SIGKILL)
            pause.release.set()
            deadline = time.monotonic() + 60
            while pause.attempts < 3:  # the pr_lock cannot be taken: attempts fail
                assert time.monotonic() < deadline, f"{pause.attempts} attempts"
                time.sleep(0.2)
        finally:
            pause.release.set()
            up_again(devstack.STACK_DIR, "valkey", state["port"])
        run = wait_terminal(run, timeout=60)
        assert workflow_result(run) == "passed"
        record_history(run, request.node.name)
    assert_passed_with_one_pr(run, repo)


@pytest.mark.skipif("temporal" in EXTERNAL, reason="TEMPORAL_ADDRESS is external")
def test_temporal_killed_mid_run_then_started_again(request, tmp_path, temporal_env):
    stack = tmp_path / "stack"
    started = manage(stack, "up", "temporal")
    assert started.returncode == 0, started.stderr
    state = json.loads((stack / "state.json").read_text())["temporal"]
    temporal_env.TEMPORAL_ADDRESS = f"127.0.0.1:{state['port']}"
    temporal_env.AMTP_HEARTBEAT_TIMEOUT_S = 5  # a lost completion is retried after this
    pause = Pause(t.GENERATE_TEST_CASES)
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    try:
        with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2, interceptors=[pause]):
            run = run_create(repository=repo, depth_level="smoke")
            assert pause.reached.wait(120), "the run never reached GenerateTestCases"
            kill_and_wait(state["pid"], signal.SIGKILL)
            pause.release.set()  # the agent works and finishes while Temporal is down
            time.sleep(5)
            up_again(stack, "temporal", state["port"])
            run = wait_terminal(run, timeout=90)
            assert workflow_result(run) == "passed"
        record_history(run, request.node.name)
    finally:
        manage(stack, "down", "temporal")
    assert_passed_with_one_pr(run, repo)


@pytest.mark.serial
@pytest.mark.skipif("valkey" in EXTERNAL, reason="VALKEY_URL is external")
@pytest.mark.parametrize("loss", ["restart", "flushall"])
def test_pr_lock_lost_while_held_makes_no_second_pull_request(tmp_path, temporal_env, loss):
    """R4: two runs on one repository; the first has written its PR and holds the pr_lock, the
    second is refused it; Valkey is killed and started again (or FLUSHALL): the second goes
    ahead, the first finishes later, one PR each, nothing left in Valkey."""
    agent_retries(temporal_env, 60)  # the second run is refused while the first holds the lock
    temporal_env.AMTP_AGENT_ACTIVITY_TIMEOUT_S = 600  # the first holds until released
    marker, release = tmp_path / "written", tmp_path / "release"
    slow = SlowDown(t.CREATE_PULL_REQUEST, 600, marker=str(marker), release=str(release), once=True)
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    conn, lock = valkey_mod.client(), valkey_mod.pr_lock_key(repo.full_name)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2, interceptors=[slow]):
        runs = [run_create(repository=repo, depth_level="smoke") for _ in range(2)]
        wait_until(marker.exists, 120, "the first PR to be written")
        holder = conn.get(lock).decode()
        held, refused = sorted(runs, key=lambda r: str(r.run_id) != holder)
        stage = refused.stages.get(name="create_pull_request")
        wait_until(lambda: refused_the_lock(stage), 300, "the second run to be refused the lock")
        lost = time.monotonic()
        if loss == "restart":
            state = devstack.read_state()["valkey"]
            kill_and_wait(state["pid"], signal.SIGKILL)
            up_again(devstack.STACK_DIR, "valkey", state["port"])
        else:
            conn.flushall()
        refused = wait_terminal(refused, timeout=60)  # while the first still holds on
        went_ahead = time.monotonic() - lost
        held.refresh_from_db()
        assert not release.exists() and held.status == "running"
        release.touch()
        held = wait_terminal(held, timeout=60)
        print(f"R4 {loss}: the refused run passed {went_ahead:.1f} s after the loss began")
        assert {workflow_result(held), workflow_result(refused)} == {"passed"}
    for run in (held, refused):
        assert run.status == "passed", (run.error_type, run.error_message)
        assert run.artifacts.filter(kind="pull_request").count() == 1
    heads = sorted(head_branch_for(r) for r in runs)
    assert git(repo.local_path, "branch", "--list", "amtp/*").split() == heads
    pulls = LocalGitHost(repo.full_name, repo.local_path).pull_requests()
    assert sorted(p["head_branch"] for p in pulls) == heads
    assert conn.get(lock) is None and valkey_mod.concurrency_count(repo.full_name) == 0


def refused_the_lock(stage) -> bool:
    stage.refresh_from_db()
    return stage.error_type == "RepoPrLockContended"


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
