"""A webhook push (repository, pushed SHA) starts at most one run, ever: replays under new
delivery ids, however much later, answer ``duplicate``; "Run again" is the way to run a commit
twice. Concurrent deliveries: tests/test_submit_races.py."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from runs.models import Run
from runs.services import run_again
from tests import api_support, webhook_support
from tests.factories import RepositoryFactory
from tests.webhook_support import SECRET, SHA, deliver, push
from triggers import services as webhook_deliveries
from triggers.models import WebhookDelivery

pytestmark = pytest.mark.django_db
api_env, hub = api_support.api_env, webhook_support.hub  # shared fixtures


@pytest.fixture(autouse=True)
def secret(settings, hub):
    settings.GITHUB_WEBHOOK_SECRET = SECRET


@pytest.fixture
def repo():
    return RepositoryFactory(full_name="acme/shop", webhook_enabled=True, default_branch="main")


def test_a_push_replayed_a_month_later_under_a_new_delivery_id_starts_nothing(
    client, repo, hub, api_env
):
    first = deliver(client, push(), delivery="d-first").json()
    month_ago = timezone.now() - timedelta(days=30)
    WebhookDelivery.objects.update(received_at=month_ago)
    Run.objects.update(created_at=month_ago)
    asked = hub.count("GET", r"/git/ref/")
    replay = deliver(client, push(), delivery="d-replayed")
    assert replay.status_code == 200
    note = webhook_deliveries.PUSH_SEEN.format(sha=SHA, repo="acme/shop", run_id=first["run_id"])
    assert replay.json() == {
        "status": "duplicate",
        "delivery": "d-replayed",
        "note": note,
        "run_id": first["run_id"],
    }
    assert Run.objects.count() == 1 and hub.count("GET", r"/git/ref/") == asked
    replayed = WebhookDelivery.objects.get(delivery_id="d-replayed")
    assert (replayed.outcome, str(replayed.run_id)) == ("ignored", first["run_id"])


def test_run_again_runs_a_pushed_commit_twice_and_a_replay_still_does_not(
    client, repo, hub, api_env
):
    deliver(client, push(), delivery="d-1")
    again = run_again(run=Run.objects.get())
    assert again.created and Run.objects.count() == 2
    assert deliver(client, push(), delivery="d-2").json()["status"] == "duplicate"
    assert Run.objects.count() == 2


def test_the_database_refuses_a_second_run_starting_delivery_of_one_push(repo):
    row = {"event": "push", "repo_full_name": "acme/shop", "pushed_sha": SHA}
    WebhookDelivery.objects.create(delivery_id="d-a", outcome="run_created", **row)
    with pytest.raises(IntegrityError), transaction.atomic():
        WebhookDelivery.objects.create(delivery_id="d-b", outcome="orchestrator_unavailable", **row)
    WebhookDelivery.objects.create(delivery_id="d-c", outcome="ignored", **row)  # a duplicate
    other = {**row, "repo_full_name": "acme/other"}
    WebhookDelivery.objects.create(delivery_id="d-d", outcome="run_created", **other)


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_counts_the_pushes_that_already_started_runs():
    """Under the old 24-hour window one push could start two runs days apart: the migration
    gives the first one's delivery the SHA (the index then holds), the later one none."""
    before, after = [("runs", "0009_explore_app_stage")], [("runs", "0010_one_run_per_push")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        _upgrade_with_two_runs_of_one_push(executor, before, after)
    finally:  # the next tests of this database expect every migration applied
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _upgrade_with_two_runs_of_one_push(executor, before, after) -> None:
    old = executor.loader.project_state(before).apps
    repository = old.get_model("repositories", "Repository").objects.create(full_name="acme/shop")
    run_model, delivery = old.get_model("runs", "Run"), old.get_model("runs", "WebhookDelivery")
    for n, trigger in enumerate(["webhook", "webhook", "form"]):
        run = run_model.objects.create(
            repository=repository,
            repo_full_name="acme/shop",
            ref=SHA,
            base_branch="main",
            depth_level="standard",
            target_framework="playwright",
            trigger=trigger,
        )
        if trigger == "webhook":
            delivery.objects.create(
                delivery_id=f"d-{n}",
                event="push",
                repo_full_name="acme/shop",
                outcome="run_created",
                run=run,
            )
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    shas = dict(WebhookDelivery.objects.values_list("delivery_id", "pushed_sha"))
    assert shas == {"d-0": SHA, "d-1": ""}
    row = {"event": "push", "repo_full_name": "acme/shop", "pushed_sha": SHA}
    with pytest.raises(IntegrityError):
        WebhookDelivery.objects.create(delivery_id="d-new", outcome="run_created", **row)
