"""Concurrent submits on the real stack (R6, R7): the limits and the deduplication hold when
requests race, not only one at a time."""

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import IntegrityError, connections
from django.test import Client

from amtp_site.valkey import window_key
from runs import slots
from runs.errors import RateLimitExceeded
from runs.models import Run
from runs.services import run_create
from runs.temporal.worker_thread import WorkerThread
from tests import api_support, webhook_support
from tests.api_support import bearer, post
from tests.factories import RepositoryFactory
from tests.stub_stages import stub_activities
from tests.temporal_worker import FAST_RETRY, wait_terminal
from tests.webhook_support import SECRET, SHA, push
from triggers.models import WebhookDelivery
from triggers.services import PUSH_SEEN

pytestmark = pytest.mark.django_db(transaction=True)
api_env, make_token = api_support.api_env, api_support.make_token


def race(count: int, request):
    """``request(i)`` from ``count`` threads released together; each closes its connection."""
    barrier = threading.Barrier(count)

    def one(i):
        try:
            barrier.wait(30)
            return request(i)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_fifty_concurrent_submits_against_a_limit_of_ten(api_env, make_token, valkey):
    """R6: exactly the limit is accepted, every other request is a 429 with Retry-After, and
    the workflow of every accepted run passes its own rate-limit check."""
    api_env.AMTP_RETRY_POLICY = {**api_env.AMTP_RETRY_POLICY, **FAST_RETRY}
    RepositoryFactory(
        full_name="acme/busy",
        rate_limit_runs=10,
        rate_limit_window_seconds=600,
        max_concurrent_runs=50,
    )
    secret = make_token()
    responses = race(
        50, lambda i: post(bearer(secret), "/api/runs", {"repo_full_name": "acme/busy"})
    )
    codes = Counter(r.status_code for r in responses)
    assert codes == {201: 10, 429: 40}, codes
    refused = [r for r in responses if r.status_code == 429]
    assert all(1 <= int(r["Retry-After"]) <= 600 for r in refused)
    accepted = {r.json()["run_id"] for r in responses if r.status_code == 201}
    assert set(map(str, Run.objects.values_list("run_id", flat=True))) == accepted
    members = {m.decode() for m in valkey.zrange(window_key("acme/busy"), 0, -1)}
    assert members == accepted  # each accepted run holds its own entry, nothing else does
    with WorkerThread(api_env.TEMPORAL_TASK_QUEUE, processes=1, activities=stub_activities()):
        runs = [wait_terminal(run, timeout=60) for run in Run.objects.all()]
    assert Counter((r.status, r.error_type) for r in runs) == {("passed", ""): 10}


def test_a_run_admitted_at_submit_is_never_refused_by_its_workflow(api_env, valkey):
    """The admission is durable: after the run's entry has slid out of a window that others
    have filled (it waited for a slot, or for Temporal), its workflow still lets it start."""
    repository = RepositoryFactory(
        full_name="acme/busy", rate_limit_runs=1, rate_limit_window_seconds=2
    )
    run = run_create(repository=repository, admit_at_submit=True)
    with pytest.raises(RateLimitExceeded):
        run_create(repository=repository, admit_at_submit=True)
    time.sleep(3)
    valkey.zadd(window_key("acme/busy"), {"a-later-run": int(valkey.time()[0])})
    slots.slot_acquire(str(run.run_id))  # the workflow's check: not refused
    assert Run.objects.count() == 1


# --- R7: one request, one run ---------------------------------------------------------------


def test_twenty_concurrent_submits_with_one_idempotency_key_make_one_run(api_env, make_token):
    RepositoryFactory(full_name="acme/shop")
    secret = make_token()
    body = {"repo_full_name": "acme/shop"}
    responses = race(20, lambda i: post(bearer(secret), "/api/runs", body, Idempotency_Key="k"))
    assert Counter(r.status_code for r in responses) == {201: 1, 200: 19}
    assert len({r.json()["run_id"] for r in responses}) == 1
    assert Run.objects.count() == 1


def test_concurrent_retries_of_one_request_take_one_place_in_the_window(
    api_env, make_token, valkey
):
    """Twenty concurrent submits with one Idempotency-Key against a window of two: the
    duplicates wait on the key and answer with the one run (none is refused for places its
    duplicates took), which holds the only place; a second request still fits."""
    RepositoryFactory(full_name="acme/busy", rate_limit_runs=2, rate_limit_window_seconds=600)
    secret = make_token()
    body = {"repo_full_name": "acme/busy"}
    responses = race(20, lambda i: post(bearer(secret), "/api/runs", body, Idempotency_Key="k"))
    assert Counter(r.status_code for r in responses) == {201: 1, 200: 19}
    (run_id,) = {r.json()["run_id"] for r in responses}
    assert [m.decode() for m in valkey.zrange(window_key("acme/busy"), 0, -1)] == [run_id]
    assert post(bearer(secret), "/api/runs", body).status_code == 201


def test_an_admitted_run_whose_insert_fails_gives_its_place_back(api_env, valkey):
    """The window is asked before the run's one INSERT: when PostgreSQL refuses the row (here
    its CHECK on the framework), nothing is stored and the place is free again."""
    repository = RepositoryFactory(
        full_name="acme/busy", rate_limit_runs=1, rate_limit_window_seconds=600
    )
    with pytest.raises(IntegrityError, match="runs_framework_valid"):
        run_create(repository=repository, target_framework="cobol", admit_at_submit=True)
    assert Run.objects.count() == 0 and valkey.zcard(window_key("acme/busy")) == 0
    run = run_create(repository=repository, admit_at_submit=True)  # the one place is free
    assert [m.decode() for m in valkey.zrange(window_key("acme/busy"), 0, -1)] == [str(run.pk)]


hub = webhook_support.hub  # acme/shop on the fake GitHub, main at SHA


def deliver(delivery_id: str):
    return webhook_support.deliver(Client(), push(), delivery=delivery_id)


@pytest.fixture
def hooked(api_env, hub):
    api_env.GITHUB_WEBHOOK_SECRET = SECRET
    return RepositoryFactory(full_name="acme/shop", webhook_enabled=True, default_branch="main")


def test_ten_concurrent_identical_deliveries_make_one_run(hooked):
    responses = race(10, lambda i: deliver("d-same"))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201]
    assert Run.objects.count() == 1 and WebhookDelivery.objects.count() == 1


def test_one_push_resent_under_new_delivery_ids_makes_one_run(hooked):
    first = deliver("d-first")
    assert first.status_code == 201
    run_id = first.json()["run_id"]
    again = race(5, lambda i: deliver(f"d-again-{i}"))  # a captured push, replayed
    assert [r.json()["status"] for r in again] == ["duplicate"] * 5
    assert {r.json()["run_id"] for r in again} == {run_id}
    assert Run.objects.count() == 1
    notes = WebhookDelivery.objects.exclude(delivery_id="d-first").values_list("note", flat=True)
    assert set(notes) == {PUSH_SEEN.format(sha=SHA, repo="acme/shop", run_id=run_id)}


def test_concurrent_new_deliveries_of_one_push_make_one_run(hooked):
    """Ten delivery ids, one push, released together: each passes the head check, and the
    unique index on the deliveries that start runs lets one of them through."""
    responses = race(10, lambda i: deliver(f"d-{i}"))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [201]
    assert Run.objects.count() == 1
    started = WebhookDelivery.objects.filter(outcome="run_created")
    assert started.count() == 1 and WebhookDelivery.objects.count() == 10
    run_id = str(Run.objects.get().run_id)
    assert {str(r.json()["run_id"]) for r in responses} == {run_id}
