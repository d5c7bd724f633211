"""Agent activities waiting for a process are not timed out: with one
agent process and two runs, one run's stage waits longer than the heartbeat timeout while the
other's runs; it is not retried, and no stage calls its LLM twice."""

import re

import pytest

from runs.services import run_create
from runs.temporal import types as t
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.samples import DEMO_WEB
from tests.slow_host import SlowDown
from tests.temporal_worker import wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_stage_queued_longer_than_the_heartbeat_timeout_runs_once(tmp_path, temporal_env, capfd):
    temporal_env.AMTP_HEARTBEAT_TIMEOUT_S = 4
    slow_crawl = SlowDown(t.CRAWL_REPO, 7, where="at_start")  # each crawl: 7 s, heartbeating
    runs = []
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=1, interceptors=[slow_crawl]):
        for name in ("one", "two"):
            path = make_git_repo(tmp_path / name, DEMO_WEB)
            repository = RepositoryFactory(full_name=f"acme/{name}", host="local", local_path=path)
            runs.append(run_create(repository=repository, depth_level="smoke"))
        runs = [wait_terminal(run, timeout=150) for run in runs]
    for run in runs:
        assert run.status == "passed", (run.error_type, run.error_message)
        attempts = dict(run.stages.values_list("name", "attempts"))
        assert attempts == {stage: 1 for _, stage in t.STAGES}, attempts
    calls = re.findall(r"LLM call \d+ for (\w+) ", capfd.readouterr().err)
    assert calls.count("test_case_generator") == 2 and calls.count("test_engineer") == 2
