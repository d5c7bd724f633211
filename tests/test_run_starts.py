"""The run starts outbox (``run_starts``) and run_worker's dispatcher, on the real PostgreSQL
and Temporal: a run is accepted whatever state Temporal is in, and its workflow is started
once, soon after, by whichever dispatcher claims it."""

import json
import os
import signal
import time
from contextlib import contextmanager

import pytest
from django.db import close_old_connections
from temporalio.client import WorkflowExecutionStatus

from amtp_site import devstack
from runs.models import Run, RunStart
from runs.services import run_cancel, run_create
from runs.temporal.dispatcher import POLL_S, WAITING_TO_START, StartDispatcher
from tests import api_support
from tests.api_support import bearer, describe, post
from tests.devstack_cli import manage
from tests.factories import RepositoryFactory
from tests.test_cancel import wait_until
from tests.test_service_restarts import EXTERNAL, kill_and_wait, up_again

pytestmark = pytest.mark.django_db(transaction=True)
api_env, make_token = api_support.api_env, api_support.make_token


@pytest.fixture
def repository(api_env):
    return RepositoryFactory(full_name="acme/shop")


@contextmanager
def dispatching(**kwargs):
    dispatcher = StartDispatcher(**kwargs).start()
    try:
        yield dispatcher
    finally:
        dispatcher.stop()


def started(run_id) -> bool:
    workflow = describe(run_id)
    return workflow is not None and workflow.status == WorkflowExecutionStatus.RUNNING


def test_an_accepted_run_is_started_when_the_outbox_notifies_not_at_the_next_poll(
    api_env, make_token, repository
):
    with dispatching() as dispatcher:
        assert dispatcher.drained.wait(30)  # idle: its next poll is POLL_S away
        created = post(bearer(make_token()), "/api/runs", {"repo_full_name": "acme/shop"})
        assert created.status_code == 201 and created.json()["status"] == "pending"
        waited = wait_until(lambda: not RunStart.objects.exists(), 60, "the outbox to empty")
    assert waited < POLL_S / 2 and dispatcher.dispatched == 1
    assert started(created.json()["run_id"])
    assert describe(created.json()["run_id"]).task_queue == api_env.TEMPORAL_TASK_QUEUE


def test_a_run_accepted_while_the_dispatcher_is_starting_others_is_not_left_for_the_poll(
    api_env, make_token, repository, monkeypatch
):
    """The dispatcher stops claiming once a claim comes back short; a run accepted while it
    was starting that batch has notified meanwhile, and psycopg keeps that notification for
    the dispatcher's next wait: the run starts at once, not at the next poll."""
    from runs.temporal import dispatcher as dispatcher_module

    token = bearer(make_token())
    first = post(token, "/api/runs", {"repo_full_name": "acme/shop"}).json()["run_id"]
    dispatch, later = dispatcher_module.run_starts_dispatch, []

    def accept_one_meanwhile(limit):
        taken = dispatch(limit)
        if taken and not later:  # a submit lands while the first batch is being started
            later.append(post(token, "/api/runs", {"repo_full_name": "acme/shop"}).json())
        return taken

    monkeypatch.setattr(dispatcher_module, "run_starts_dispatch", accept_one_meanwhile)
    with dispatching() as dispatcher:
        waited = wait_until(
            lambda: later and not RunStart.objects.exists(), 60, "the outbox to empty"
        )
        assert waited < POLL_S / 2 and dispatcher.dispatched == 2
    assert started(first) and started(later[0]["run_id"])


def test_a_run_accepted_while_temporal_is_unreachable_starts_once_it_answers(
    api_env, make_token, repository, caplog
):
    address, api_env.TEMPORAL_ADDRESS = api_env.TEMPORAL_ADDRESS, "127.0.0.1:1"
    created = post(bearer(make_token()), "/api/runs", {"repo_full_name": "acme/shop"})
    assert created.status_code == 201, created.content  # accepted: nothing to retry
    run_id = created.json()["run_id"]
    with dispatching():
        wait_until(lambda: "could not start 1 run(s)" in caplog.text, 60, "a failed start")
        assert RunStart.objects.filter(run_id=run_id).exists()  # kept for the next try
        assert Run.objects.get(pk=run_id).status == Run.Status.PENDING
        shown = bearer(make_token()).get(f"/api/runs/{run_id}").json()["stages"][0]
        assert (shown["error_type"], shown["error_message"]) == (
            "OrchestratorUnavailable",
            WAITING_TO_START,
        )
        assert "127.0.0.1" not in str(shown)  # the details are in the worker's log
        api_env.TEMPORAL_ADDRESS = address
        wait_until(lambda: not RunStart.objects.exists(), 60, "the outbox to empty")
    assert started(run_id)


def test_two_dispatchers_start_every_run_exactly_once(api_env, repository):
    """Claims skip rows the other dispatcher holds: no run is taken (or counted) twice."""
    runs = [run_create(repository=repository) for _ in range(20)]
    with dispatching(batch=2) as one, dispatching(batch=2) as other:
        wait_until(lambda: not RunStart.objects.exists(), 60, "the outbox to empty")
    assert one.dispatched + other.dispatched == 20, (one.dispatched, other.dispatched)
    assert all(started(run.run_id) for run in runs)


def test_a_run_cancelled_before_its_start_is_never_started(api_env, repository):
    run = run_create(repository=repository)
    run_cancel(run=run)
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and not RunStart.objects.exists()
    assert set(run.stages.values_list("status", flat=True)) == {"cancelled"}
    with dispatching() as dispatcher:
        assert dispatcher.drained.wait(30)
    assert dispatcher.dispatched == 0 and describe(run.run_id) is None


# --- real faults: the dispatcher outlives its database connection and Temporal ---------------


@pytest.mark.serial
@pytest.mark.skipif("postgres" in EXTERNAL, reason="DATABASE_URL is external")
@pytest.mark.skipif(
    bool(os.environ.get("AMTP_TEST_DATABASE_NAME")),
    reason="the server is shared with other test sessions: stopping it would fail theirs",
)
def test_the_dispatcher_listens_again_after_postgres_restarts(api_env, repository):
    """Its LISTEN connection dies with the server; it backs off, connects again, and a run
    accepted afterwards is started on the new connection's notification."""
    state = devstack.read_state()["postgres"]
    with dispatching() as dispatcher:
        assert dispatcher.drained.wait(30)
        try:
            kill_and_wait(devstack.postgres.pid(), signal.SIGINT)
            time.sleep(2)  # it notices, and backs off
        finally:
            up_again(devstack.STACK_DIR, "postgres", state["port"])
            close_old_connections()  # this thread's connection died with the server too
        dispatcher.drained.clear()
        assert dispatcher.drained.wait(60)  # connected and listening again
        run = run_create(repository=repository)
        waited = wait_until(lambda: not RunStart.objects.exists(), 60, "the outbox to empty")
    assert waited < POLL_S / 2 and started(run.run_id)


@pytest.mark.skipif("temporal" in EXTERNAL, reason="TEMPORAL_ADDRESS is external")
def test_runs_accepted_while_temporal_is_killed_start_when_it_is_back(
    tmp_path, api_env, repository, caplog
):
    stack = tmp_path / "stack"
    assert manage(stack, "up", "temporal").returncode == 0
    state = json.loads((stack / "state.json").read_text())["temporal"]
    address, api_env.TEMPORAL_ADDRESS = api_env.TEMPORAL_ADDRESS, f"127.0.0.1:{state['port']}"
    try:
        with dispatching() as dispatcher:
            first = run_create(repository=repository)
            wait_until(lambda: not RunStart.objects.exists(), 60, "the outbox to empty")
            kill_and_wait(state["pid"], signal.SIGKILL)
            runs = [run_create(repository=repository) for _ in range(3)]  # accepted all the same
            wait_until(lambda: "could not start" in caplog.text, 60, "a failed start")
            up_again(stack, "temporal", state["port"])
            wait_until(lambda: not RunStart.objects.exists(), 60, "the outbox to empty")
        assert dispatcher.dispatched == 4
        assert all(started(run.run_id) for run in [first, *runs])
    finally:
        manage(stack, "down", "temporal")
        api_env.TEMPORAL_ADDRESS = address  # for the fixture's clean-up
