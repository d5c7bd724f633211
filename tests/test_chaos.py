"""R2, bounded: runs in flight while the real worker's process group is SIGKILLed at random
moments and started again. ``scripts/chaos.py`` is the long version (30 runs, 5 kills); here
two runs (each agent activity is a fresh process: a run costs seconds of CPU) and two kills,
with the checks of tests/chaos.py. ``AMTP_CHAOS_SEED`` replays a failure's random gaps."""

import os
import random

import pytest

from amtp_site import valkey as valkey_mod
from tests.chaos import CHECKS, check, launch, unleash
from tests.factories import RepositoryFactory, RunFactory, StageFactory
from tests.gitrepo import git, make_git_repo
from tests.samples import DEMO_WEB
from tests.temporal_worker import worker_setting

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_runs_survive_two_kills_of_the_worker(tmp_path, temporal_env, monkeypatch):
    # A dead worker's activities are retried after these timeouts (the defaults are 60 s).
    worker_setting(temporal_env, monkeypatch, "AMTP_HEARTBEAT_TIMEOUT_S", 5)
    worker_setting(temporal_env, monkeypatch, "AMTP_BOOKKEEPING_TIMEOUT_S", 5)
    # An activity in flight at each kill loses an attempt to it.
    temporal_env.AMTP_RETRY_POLICY["maximum_attempts"] = 10
    monkeypatch.setenv("AMTP_RETRY_MAX_ATTEMPTS", "10")
    repositories = [
        RepositoryFactory(
            full_name=f"acme/web-{i}",
            host="local",
            local_path=make_git_repo(tmp_path / f"web-{i}", DEMO_WEB),
        )
        for i in range(2)
    ]
    seed = int(os.environ.get("AMTP_CHAOS_SEED") or random.randrange(1 << 32))
    runs = launch(repositories, 2)
    chaos = unleash(
        runs,
        temporal_env.TEMPORAL_TASK_QUEUE,
        tmp_path,
        kills=2,
        rng=random.Random(seed),
        gap=(0, 0.5),  # once the worker moved a stage; a forked agent stage takes ~1 s
        timeout=180,
    )
    print(chaos.report())
    assert len(chaos.kills) == 2
    assert not chaos.failed, f"seed {seed}:\n{chaos.report()}"


def test_the_checks_catch_what_they_look_for(tmp_path, valkey):
    """A run left running, a stage left running, a stray branch, a leaked slot: each named."""
    path = make_git_repo(tmp_path / "web", DEMO_WEB)
    run = RunFactory(repository=RepositoryFactory(host="local", local_path=path), status="running")
    StageFactory(run=run, status="running")
    git(path, "branch", "amtp/run-stray", "main")
    valkey_mod.concurrency_incr(run.repo_full_name, str(run.run_id))
    assert sorted(check([run])) == sorted(CHECKS[i] for i in (0, 1, 3, 4))
