"""Cancellation (R18) on the real stack: whatever stage a run is in, cancelling it leaves it
``cancelled`` with its open stages ``cancelled``, no pull request or head branch, and its
concurrency slot and pr_lock released."""

import time

import pytest

from amtp_site import valkey as valkey_mod
from repositories.hosts.local import LocalGitHost
from runs.services import run_cancel, run_create
from runs.temporal import types as t
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory
from tests.gitrepo import git, make_git_repo
from tests.samples import DEMO_WEB
from tests.slow_host import SlowDown
from tests.stub_stages import stub_activities
from tests.temporal_worker import wait_for, wait_terminal
from tests.test_workflow import record_histories  # noqa: F401  (AMTP_RECORD_HISTORIES=1)

pytestmark = pytest.mark.django_db(transaction=True)


def wait_until(predicate, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, f"timed out waiting for {what}"
        time.sleep(0.1)
    return time.monotonic() - start


def test_cancel_while_the_pull_request_is_being_written(tmp_path, temporal_env):
    """The branch and the PR are written, the host is still busy: the run ends cancelled and
    what was written is taken back (branch deleted, PR closed), lock and slot released."""
    temporal_env.AMTP_HEARTBEAT_TIMEOUT_S = 10  # heartbeats carry the cancel to the agent
    marker = tmp_path / "written"
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    repo = RepositoryFactory(full_name="acme/web", host="local", local_path=path)
    slow = SlowDown(t.CREATE_PULL_REQUEST, 6, marker=str(marker))
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2, interceptors=[slow]):
        run = run_create(repository=repo, depth_level="smoke")
        wait_until(marker.exists, 120, "CreatePullRequest to write")
        assert git(path, "branch", "--list", "amtp/*")  # written: there is something to undo
        run_cancel(run=run)
        took = wait_until(lambda: wait_terminal(run, 60).is_terminal, 60, "the run to end")
        wait_until(lambda: not valkey_mod.concurrency_count(repo.full_name), 15, "the slot")
    # The host's 6 s, then the activity stops, then the workflow takes back what was written.
    assert took < 30, took
    assert (run.status, run.error_type) == ("cancelled", ""), run.error_message
    stages = dict(run.stages.values_list("name", "status"))
    assert stages["create_pull_request"] == "cancelled"
    assert git(path, "branch", "--list", "amtp/*") == ""
    assert [p.get("state") for p in LocalGitHost(repo.full_name, path).pull_requests()] == [
        "closed"
    ]
    assert (run.pr_url, run.pr_number, run.head_branch) == ("", None, "")
    assert not run.artifacts.filter(kind="pull_request").exists()
    assert valkey_mod.client().get(valkey_mod.pr_lock_key(repo.full_name)) is None


@pytest.mark.parametrize("stage", [stage for _, stage in t.STAGES])
def test_cancel_during_each_stage(tmp_path, temporal_env, stage):
    """Stub stages that take a while: cancelled in ``stage``, the run and every open stage end
    ``cancelled`` and the slot is released."""
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    repo = RepositoryFactory(full_name="acme/web", host="local", local_path=path)
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=1, activities=stub_activities(30, slow=stage)):
        run = run_create(repository=repo)
        wait_for(run, lambda r: r.stages.get(name=stage).status == "running", timeout=60)
        run_cancel(run=run)
        run = wait_terminal(run, timeout=30)
        wait_until(lambda: not valkey_mod.concurrency_count(repo.full_name), 15, "the slot")
    assert (run.status, run.error_type) == ("cancelled", ""), run.error_message
    statuses = dict(run.stages.values_list("name", "status"))
    names = [name for _, name in t.STAGES]
    before = names[: names.index(stage)]
    assert statuses == {name: "passed" if name in before else "cancelled" for name in names}
