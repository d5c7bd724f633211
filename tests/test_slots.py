"""Concurrency slots against the real Valkey and PostgreSQL: a run's slot is given back
whatever happens to it, and a run waiting for a slot says so on its first stage."""

import time

import pytest

from amtp_site import valkey as valkey_mod
from runs import slots, transitions
from runs.errors import RepoConcurrencyLimited
from runs.models import Run
from runs.services import run_cancel, run_create
from runs.temporal.worker_thread import WorkerThread
from tests.factories import RepositoryFactory, RunFactory
from tests.histories import record_history
from tests.stub_stages import stub_activities
from tests.temporal_worker import wait_for, wait_terminal

pytestmark = pytest.mark.django_db


@pytest.fixture
def repository(valkey):
    return RepositoryFactory(full_name="acme/web", max_concurrent_runs=2)


def running_run(repository):
    run = RunFactory(repository=repository, status="running")
    transitions.create_stages(run)
    return str(run.pk)


def test_a_run_held_longer_than_its_lease_leaks_no_slot(repository, settings):
    settings.AMTP_SLOT_LEASE_S = 1  # shrunk: an approval hold outlives it
    held, other = running_run(repository), running_run(repository)
    slots.slot_acquire(held)
    time.sleep(1.5)
    slots.slot_acquire(other)
    transitions.run_end(run_id=held, status="cancelled")  # after its lease: none to give back
    transitions.run_end(run_id=other, status="cancelled")
    assert valkey_mod.concurrency_count("acme/web") == 0
    for _ in range(2):  # both places are free
        slots.slot_acquire(running_run(repository))


def test_a_finished_run_that_never_released_its_slot_gives_it_back(repository):
    lost = [running_run(repository), running_run(repository)]
    for run_id in lost:
        slots.slot_acquire(run_id)
    Run.objects.filter(pk__in=lost).update(status="failed")  # their release never came
    third = running_run(repository)
    slots.slot_acquire(third)  # PostgreSQL says both have ended
    assert valkey_mod.concurrency_members("acme/web") == [third]


def test_a_third_run_waits_for_a_slot_and_says_so(repository):
    for _ in range(2):
        slots.slot_acquire(running_run(repository))
    third = running_run(repository)
    with pytest.raises(RepoConcurrencyLimited) as refused:
        slots.slot_acquire(third)
    assert refused.value.message == slots.CONCURRENCY_LIMITED.format(repo="acme/web", limit=2)
    stage = Run.objects.get(pk=third).stages.get(name="crawl_repo")
    assert (stage.status, stage.error_type) == ("pending", "RepoConcurrencyLimited")
    assert stage.error_message.endswith("waiting for a slot")
    assert valkey_mod.concurrency_count("acme/web") == 2


# --- in the workflow ------------------------------------------------------------------------


@pytest.fixture
def gated(valkey):
    """Two slots; every run holds for a policy approval, keeping its slot meanwhile."""
    return RepositoryFactory(full_name="acme/gated", max_concurrent_runs=2, require_approval=True)


def held(run):
    return wait_for(run, lambda r: r.approvals.filter(decision="pending").exists(), timeout=60)


@pytest.mark.django_db(transaction=True)
def test_a_third_run_waits_visibly_for_as_long_as_it_takes_then_starts(temporal_env, gated):
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=1, activities=stub_activities()):
        first, second = (held(run_create(repository=gated)) for _ in range(2))
        third = run_create(repository=gated)
        crawl = third.stages.get(name="crawl_repo")
        wait_for(third, lambda r: crawl.__class__.objects.get(pk=crawl.pk).error_type, 30)
        time.sleep(8)  # far longer than the general policy's attempts take here (~2 s)
        third.refresh_from_db()
        crawl.refresh_from_db()
        assert (third.status, crawl.status) == ("running", "pending")
        assert crawl.error_message == slots.CONCURRENCY_LIMITED.format(repo="acme/gated", limit=2)
        run_cancel(run=first)
        held(third)  # started within the policy's longest interval of the slot coming free
        assert third.stages.get(name="crawl_repo").status == "passed"
        for run in (second, third):
            run_cancel(run=run)
            wait_terminal(run, 30)
    record_history(third, "test_a_third_run_waits_for_a_slot_then_starts")


@pytest.mark.django_db(transaction=True)
def test_a_run_that_waited_as_long_as_configured_fails_saying_so(temporal_env, gated):
    temporal_env.AMTP_SLOT_WAIT_S = 3
    gated.max_concurrent_runs = 1
    gated.save()
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=1, activities=stub_activities()):
        first = held(run_create(repository=gated))
        second = wait_terminal(run_create(repository=gated), 30)
        run_cancel(run=first)
        wait_terminal(first, 30)
    assert (second.status, second.error_type) == ("failed", "RepoConcurrencyLimited")
    assert second.error_message == slots.CONCURRENCY_LIMITED.format(repo="acme/gated", limit=1)
