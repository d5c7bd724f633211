"""What starts a maintenance run besides a push and the API: the repository's schedule (a
real Temporal Schedule, fired at once with ``trigger()``), admin's "Check tests now", and
``sync_schedules`` catching up with settings saved while Temporal was away."""

import time

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from temporalio.client import ScheduleOverlapPolicy
from temporalio.service import RPCError, RPCStatusCode

from amtp_site import temporal
from repositories.errors import RepositoryInvalid
from repositories.models import Repository, RepositoryGrant
from repositories.schedules import (
    maintenance_schedule_sync,
    maintenance_schedules_sync_all,
    schedule_id,
)
from repositories.services import repository_update
from runs.models import Run
from runs.temporal.worker_thread import WorkerThread
from tests.admin_helpers import change_url, client_for, csrf_post, flashed, staff
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.temporal_worker import wait_terminal
from tests.test_repository_rules import GITHUB_FORM
from triggers import maintenance as maintenance_starts

pytestmark = pytest.mark.django_db(transaction=True)

PREVIEW = "http://127.0.0.1:9/"  # never asked: the repository holds no AMTP spec


def kept_green(tmp_path, **fields):
    """A local repository that keeps its tests green (and holds none of AMTP's yet)."""
    path = make_git_repo(tmp_path / "notes", {"README.md": "# notes\n"})
    values = {
        "full_name": "acme/notes",
        "host": "local",
        "local_path": str(path),
        "preview_url": PREVIEW,
        "allowed_hosts": ["127.0.0.1"],
        **fields,
    }
    return RepositoryFactory(**values)


def describe(repository):
    return temporal.call(lambda c: c.get_schedule_handle(schedule_id(repository.pk)).describe())


def is_gone(repository) -> bool:
    try:
        describe(repository)
    except RPCError as exc:
        return exc.status == RPCStatusCode.NOT_FOUND
    return False


def test_a_daily_schedule_fires_a_maintenance_run_through_the_service_and_is_deleted_when_off(
    tmp_path, temporal_env
):
    repository = kept_green(tmp_path, maintenance_every="daily")
    synced, said = maintenance_schedule_sync(repository)
    assert synced and said.endswith("created"), said
    schedule = describe(repository).schedule
    assert schedule.spec.intervals[0].every.days == 1
    assert schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
    assert schedule.action.task_queue == temporal_env.TEMPORAL_TASK_QUEUE
    try:
        with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
            temporal.call(lambda c: c.get_schedule_handle(schedule_id(repository.pk)).trigger())
            run, deadline = None, time.monotonic() + 30
            while run is None and time.monotonic() < deadline:
                run = Run.objects.filter(repository=repository).first()
                time.sleep(0.2)
            assert run is not None, "the schedule started no run"
            run = wait_terminal(run, 60)
        assert (run.kind, run.trigger, run.requested_by) == ("maintenance", "schedule", "schedule")
        assert run.status == "passed", (run.error_type, run.error_message)
        assert run.request_key.startswith(f"schedule:{schedule_id(repository.pk)}-")
        sid = schedule_id(repository.pk)
        temporal.call(lambda c: c.get_schedule_handle(sid).pause(note="held by ops"))
        weekly = repository_update(repository=repository, maintenance_every="weekly")
        assert maintenance_schedule_sync(weekly)[1].endswith("updated")
        now = describe(repository).schedule
        assert now.spec.intervals[0].every.days == 7
        assert now.state.paused and now.state.note == "held by ops"  # a pause made in Temporal
    finally:
        off = repository_update(repository=repository, maintenance_every="")
        synced, said = maintenance_schedule_sync(off)
    assert synced and said.endswith("deleted"), said
    assert is_gone(repository)


def test_a_firing_makes_one_run_and_none_while_the_last_still_goes(tmp_path, db):
    repository = kept_green(tmp_path, maintenance_every="weekly")
    start = maintenance_starts.scheduled_maintenance_start
    first = start(repository_id=repository.pk, key="amtp-maintenance:q:1-2026-11-26T00:00:00Z")
    assert Run.objects.get(pk=first).trigger == "schedule"
    assert start(repository_id=repository.pk, key="amtp-maintenance:q:1-2026-11-26T00:00:00Z") == (
        first
    )  # a retried activity: the same run
    later = start(repository_id=repository.pk, key="amtp-maintenance:q:1-2026-12-03T00:00:00Z")
    assert later == maintenance_starts.STILL_GOING.format(
        run_id=first, repo="acme/notes", status="pending"
    )
    assert Run.objects.count() == 1
    assert start(repository_id=10**9, key="x").startswith("repository 1000000000 has no")
    Run.objects.update(status="passed")
    long_key = "amtp-maintenance:" + "q" * 1000 + ":1-2026-12-03T00:00:00Z"  # a long task queue
    long_run = Run.objects.get(pk=start(repository_id=repository.pk, key=long_key))
    assert len(long_run.request_key) <= 200
    assert start(repository_id=repository.pk, key=long_key) == str(long_run.pk)
    repository_update(repository=repository, preview_url="", allowed_hosts=[])
    Run.objects.update(status="passed")
    said = start(repository_id=repository.pk, key="amtp-maintenance:q:1-2026-12-10T00:00:00Z")
    assert said == "not started: " + maintenance_starts.NO_TARGET.format(repo="acme/notes")


def test_the_schedule_setting_is_one_of_its_choices(tmp_path, db):
    repository = kept_green(tmp_path)
    with pytest.raises(RepositoryInvalid) as refused:
        repository_update(repository=repository, maintenance_every="*/5 * * * *")
    assert "maintenance_every" in refused.value.errors


def test_a_setting_saved_while_temporal_is_away_is_said_and_caught_up_by_sync_schedules(
    tmp_path, temporal_env, settings
):
    repository = kept_green(tmp_path, maintenance_every="daily")
    address = settings.TEMPORAL_ADDRESS
    settings.TEMPORAL_ADDRESS = "127.0.0.1:9"  # nothing listens there
    began = time.monotonic()
    synced, said = maintenance_schedule_sync(repository)
    assert not synced and said.startswith("the setting is saved, but Temporal could not be")
    assert time.monotonic() - began < 15
    settings.TEMPORAL_ADDRESS = address
    try:
        call_command("sync_schedules")
        assert describe(repository).schedule.spec.intervals[0].every.days == 1
    finally:
        repository_update(repository=repository, maintenance_every="")
        call_command("sync_schedules")  # off: the schedule of this task queue is deleted
    assert is_gone(repository)
    assert maintenance_schedules_sync_all() == []


def test_check_tests_now_starts_one_maintenance_run_for_an_operator(tmp_path, db):
    repository = kept_green(tmp_path)
    operator = get_user_model().objects.create_user("op", password="pw", is_staff=True)
    RepositoryGrant.objects.create(repository=repository, user=operator, role="operator")
    client, url = client_for(operator, csrf=True), reverse("check_tests_now", args=[repository.pk])
    assert client.post(url).status_code == 403  # no CSRF token: refused
    page = change_url(repository)
    response = csrf_post(client, page, url, {})
    run = Run.objects.get()
    assert (run.kind, run.trigger, run.requested_by) == ("maintenance", "form", "op")
    assert response.url == reverse("admin:runs_run_change", args=[run.pk])
    assert flashed(response) == [
        f"Maintenance run <a href='{response.url}'>{run.pk}</a> started on acme/notes."
    ]
    again = csrf_post(client, page, url, {})  # a second click while it is pending
    assert Run.objects.count() == 1 and "is still pending" in flashed(again)[0]
    assert client.get(url).status_code == 405
    assert "Check tests now" in client.get(page).content.decode()


def test_check_tests_now_refuses_viewers_strangers_and_repositories_without_a_preview(tmp_path, db):
    repository = kept_green(tmp_path)
    url = reverse("check_tests_now", args=[repository.pk])
    viewer = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    RepositoryGrant.objects.create(repository=repository, user=viewer, role="viewer")
    refused = client_for(viewer).post(url)
    assert refused.url == change_url(repository)
    assert flashed(refused) == [
        "Checking the tests on acme/notes needs a role on it that allows it (operator, admin), "
        "or the runs.add_run permission on every repository"
    ]
    assert client_for(staff()).post(url).status_code == 404  # cannot see it: not there
    launcher = client_for(staff("runs.add_run"))
    assert launcher.post(reverse("check_tests_now", args=[10**9])).status_code == 404
    repository_update(repository=repository, preview_url="", allowed_hosts=[])
    said = launcher.post(url)
    assert flashed(said) == [maintenance_starts.NO_TARGET.format(repo="acme/notes")]
    assert not Run.objects.exists()


def test_saving_the_setting_in_admin_sets_the_schedule_or_says_why_not(
    admin_client, temporal_env, settings
):
    form = {**GITHUB_FORM, "maintenance_every": "weekly", "preview_url": "https://notes.test"}
    address, settings.TEMPORAL_ADDRESS = settings.TEMPORAL_ADDRESS, "127.0.0.1:9"
    saved = admin_client.post(reverse("admin:repositories_repository_add"), form, follow=True)
    repository = Repository.objects.get(full_name="acme/settings")
    assert repository.maintenance_every == "weekly"  # saved all the same
    assert any("Temporal could not be reached to set its schedule" in m for m in flashed(saved))
    settings.TEMPORAL_ADDRESS = address
    try:
        page = change_url(repository)
        again = admin_client.post(page, {**form, "maintenance_every": "daily"}, follow=True)
        sid = schedule_id(repository.pk)
        assert f"maintenance runs every day: schedule {sid} created" in flashed(again)
        assert describe(repository).schedule.spec.intervals[0].every.days == 1
        off = admin_client.post(page, {**form, "maintenance_every": ""}, follow=True)
        assert f"no maintenance schedule: schedule {sid} deleted" in flashed(off)
        unchanged = admin_client.post(page, {**form, "maintenance_every": ""}, follow=True)
        assert not any("schedule" in m for m in flashed(unchanged))  # nothing asked of Temporal
    finally:
        maintenance_schedule_sync(Repository.objects.get(pk=repository.pk))
    assert is_gone(repository)
