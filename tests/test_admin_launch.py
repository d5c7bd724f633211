"""The staff launch form at /launch/, and runs launched there driven from the admin through a
real worker (approve, reject, cancel, run again)."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from approvals.models import Approval
from runs.admin.launch import LAUNCHED
from runs.models import Run, RunStart
from tests.admin_helpers import VIEW, change_url, client_for, csrf_post, flashed
from tests.factories import RepositoryFactory
from tests.gitrepo import make_git_repo
from tests.samples import DEMO_WEB
from tests.temporal_worker import wait_for, wait_terminal

LAUNCH = reverse("launch_run")
RUNS = reverse("admin:runs_run_changelist")


@pytest.fixture
def launcher(django_user_model):
    user = django_user_model.objects.create_user(username="lena", password="pw", is_staff=True)
    codenames = [
        p.split(".")[1]
        for p in (*VIEW, "runs.add_run", "runs.change_run", "approvals.decide_approval")
    ]
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return django_user_model.objects.get(pk=user.pk)


def local_repo(tmp_path, name, **settings):
    path = make_git_repo(tmp_path / name, DEMO_WEB)
    return RepositoryFactory(full_name=f"acme/{name}", host="local", local_path=path, **settings)


def form_data(client: Client, **fields) -> dict:
    """The fields of a freshly rendered form (its submission id included), then ``fields``."""
    form = client.get(LAUNCH).context["form"]
    return {
        "submission": str(form["submission"].value()),
        "ref": "",
        "depth_level": "",
        "target_framework": "",
        "base_branch": "",
        **fields,
    }


@pytest.mark.django_db
def test_the_launch_page_prefills_from_the_chosen_repository(launcher):
    repo = RepositoryFactory(
        full_name="acme/web",
        default_branch="develop",
        default_depth_level="deep",
        default_framework="maestro",
    )
    response = client_for(launcher).get(LAUNCH, {"repository": repo.pk})
    body = response.content.decode()
    assert response.status_code == 200
    assert f'<option value="{repo.pk}" selected>acme/web</option>' in body
    assert 'id="amtp-repository-defaults"' in body
    assert '"ref": "develop"' in body and '"depth_level": "deep"' in body


@pytest.mark.django_db
def test_the_launch_page_needs_staff_and_the_add_run_permission(django_user_model, launcher):
    assert Client().get(LAUNCH)["Location"].startswith(reverse("admin:login"))
    staff = django_user_model.objects.create_user(username="s", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_run"))
    assert client_for(staff).get(LAUNCH).status_code == 403
    assert "Launch run" not in client_for(staff).get(RUNS).content.decode()
    user = django_user_model.objects.create_user(username="u", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    assert client_for(user).get(LAUNCH).status_code == 302  # not staff: to the login page


@pytest.mark.django_db
def test_invalid_input_redisplays_the_form_with_field_errors(launcher):
    repo = RepositoryFactory()
    client = client_for(launcher)
    response = client.post(
        LAUNCH,
        form_data(
            client,
            repository=repo.pk,
            ref="feature..x",
            base_branch="has space",
            depth_level="bottomless",
            target_framework="cypress",
        ),
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "contains '..'" in errors["ref"][0]
    assert "contains a space" in errors["base_branch"][0]
    assert set(errors) == {"ref", "base_branch", "depth_level", "target_framework"}
    assert 'value="feature..x"' in response.content.decode()
    too_long = client.post(LAUNCH, form_data(client, repository=repo.pk, ref="r" * 256))
    assert "at most 255 characters" in too_long.context["form"].errors["ref"][0]
    missing = client.post(LAUNCH, form_data(client, repository=""))
    assert "repository" in missing.context["form"].errors
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_valid_launch_saves_the_run_with_repository_defaults_once(launcher, settings):
    settings.TEMPORAL_ADDRESS = "127.0.0.1:1"  # unreachable: the run is saved all the same
    repo = RepositoryFactory(
        default_branch="develop", default_depth_level="smoke", default_framework="maestro"
    )
    client = client_for(launcher, csrf=True)
    data = form_data(client, repository=repo.pk, base_branch="release/1.x")
    response = csrf_post(client, LAUNCH, LAUNCH, data)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == change_url(run)
    assert (run.ref, run.base_branch, run.depth_level, run.target_framework) == (
        "develop",
        "release/1.x",
        "smoke",
        "maestro",
    )
    assert run.trigger == "form" and run.requested_by == "lena" and run.status == "pending"
    assert flashed(response)[0] == LAUNCHED.format(
        run_id=run.pk, repo=run.repo_full_name, ref="develop"
    )
    assert RunStart.objects.filter(run=run).exists()  # a worker's dispatcher starts it
    again = csrf_post(client, LAUNCH, LAUNCH, data)  # the same form sent twice
    assert again["Location"] == change_url(run) and Run.objects.count() == 1


# --- with a real worker ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("decision,status", [("approved", "passed"), ("rejected", "failed")])
def test_deciding_from_the_run_page_resumes_the_workflow(
    tmp_path, worker, launcher, decision, status
):
    # The launcher decides their own run: this repository allows self-approval.
    repo = local_repo(
        tmp_path,
        "gated",
        require_approval=True,
        default_depth_level="smoke",
        allow_self_approval=True,
    )
    run = Run.objects.get(pk=_launch(launcher, repo))
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    approval = Approval.objects.get(run=run)
    client = client_for(launcher, csrf=True)
    page = change_url(run)
    response = csrf_post(
        client,
        page,
        reverse("admin:approvals_approval_decide", args=[approval.pk]),
        {"decision": decision, "comment": "looked at it", "next": page},
    )
    assert response["Location"] == page
    run = wait_terminal(run)
    approval.refresh_from_db()
    assert run.status == status, (run.error_type, run.error_message)
    assert (approval.decision, approval.decided_by, approval.decision_comment) == (
        decision,
        "lena",
        "looked at it",
    )
    assert run.trigger == "form" and run.requested_by == "lena"
    if decision == "approved":
        assert run.pr_number == 1
        body = client.get(page).content.decode()
        assert "amtp-badge-passed" in body and "Test Engineer Output" in body
        assert "data-amtp-autorefresh" not in body
    else:
        assert run.error_type == "ApprovalRejected" and "looked at it" in run.error_message


@pytest.mark.django_db(transaction=True)
def test_cancel_and_run_again_from_the_admin(tmp_path, worker, launcher):
    repo = local_repo(tmp_path, "held", require_approval=True, default_depth_level="smoke")
    run = Run.objects.get(pk=_launch(launcher, repo))
    wait_for(run, lambda r: r.approvals.filter(decision="pending").exists())
    client = client_for(launcher, csrf=True)
    page = change_url(run)
    csrf_post(client, page, reverse("admin:runs_run_cancel", args=[run.pk]), {})
    assert wait_terminal(run).status == "cancelled"

    response = csrf_post(client, page, reverse("admin:runs_run_again", args=[run.pk]), {})
    again = Run.objects.exclude(pk=run.pk).get()
    assert response["Location"] == change_url(again)
    assert (again.ref, again.depth_level, again.target_framework, again.base_branch) == (
        run.ref,
        run.depth_level,
        run.target_framework,
        run.base_branch,
    )
    assert again.trigger == "form" and again.requested_by == "lena"
    wait_for(again, lambda r: r.approvals.filter(decision="pending").exists())  # really started
    csrf_post(client, RUNS, RUNS, {"action": "cancel_selected", "_selected_action": [again.pk]})
    assert wait_terminal(again).status == "cancelled"


def _launch(user, repo) -> str:
    client = client_for(user, csrf=True)
    response = csrf_post(client, LAUNCH, LAUNCH, form_data(client, repository=repo.pk))
    assert response.status_code == 302, response.context["form"].errors
    return response["Location"].rstrip("/").split("/")[-2]
