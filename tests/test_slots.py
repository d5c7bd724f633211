"""Concurrency slots against the real Valkey and PostgreSQL: a run's slot is given back
whatever happens to it, and a run waiting for a slot says so on its first stage."""

import time

import pytest

from amtp_site import valkey as valkey_mod
from amtp_site.errors import RepoConcurrencyLimited
from runs import slots
from runs.models import Run
from tests.factories import RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def repository(valkey):
    return RepositoryFactory(full_name="acme/web", max_concurrent_runs=2)


def running_run(repository):
    run = RunFactory(repository=repository, status="running")
    from runs import lifecycle

    lifecycle.create_stages(run)
    return str(run.pk)


def test_a_run_held_longer_than_its_lease_leaks_no_slot(repository, settings):
    settings.AMTP_SLOT_LEASE_S = 1  # shrunk: an approval hold outlives it
    held, other = running_run(repository), running_run(repository)
    slots.slot_acquire(held)
    time.sleep(1.5)
    slots.slot_acquire(other)
    slots.slot_release(held)  # after its lease: nothing to give back
    slots.slot_release(other)
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
