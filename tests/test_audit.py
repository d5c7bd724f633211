"""The audit trail an operator can read: approve, reject, cancel, run again, token mint and
revoke, repository changes — each a LogEntry (who, when, what, from which surface) on the
object's History page, and filterable in the admin's audit list."""

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import User
from django.urls import reverse

from access import auth
from access.models import ApiToken
from amtp_site.audit import Actor
from repositories.models import Repository, RepositoryGrant
from runs.models import Run
from runs.services import run_create
from runs.temporal.dispatcher import run_starts_dispatch
from tests import api_support
from tests.admin_helpers import VIEW, change_url, client_for, csrf_post, staff
from tests.api_support import bearer, post
from tests.factories import ApprovalFactory, RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db

api_env = api_support.api_env


def entries(obj) -> list[LogEntry]:
    return list(
        LogEntry.objects.filter(object_id=str(obj.pk), content_type__model=obj._meta.model_name)
        .select_related("user")
        .order_by("pk")
    )


def history(client, obj) -> str:
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_history", args=[obj.pk])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def held(api_env):
    """A started workflow (no worker) with a pending approval: deciding can signal it."""
    run = run_create(repository=RepositoryFactory(full_name="acme/shop"))
    run_starts_dispatch()  # what a worker's dispatcher does
    return ApprovalFactory(run=run, stage=run.stages.get(name="create_pull_request"))


def test_an_approval_in_admin_is_on_the_approvals_history_page(held):
    approver = staff(*VIEW, "approvals.decide_approval")
    client = client_for(approver, csrf=True)
    decide = reverse("admin:approvals_approval_decide", args=[held.pk])
    csrf_post(client, change_url(held), decide, {"decision": "approved", "comment": "ship it"})
    [entry] = entries(held)
    assert (entry.user, entry.action_flag) == (approver, CHANGE)
    assert entry.change_message == (
        f"Approved; comment: 'ship it' (via admin, as {approver.get_username()})"
    )
    assert "Approved; comment: &#x27;ship it&#x27; (via admin" in history(client, held)


def test_a_reject_through_the_api_is_filed_under_the_tokens_owner(held):
    owner = User.objects.create_user("ci-bot")
    RepositoryGrant.objects.create(repository=held.run.repository, user=owner, role="approver")
    token, secret = auth.api_token_create(
        name="ci", scopes=["approvals:decide"], user=owner, actor=None
    )
    url = f"/api/approvals/{held.approval_id}/decision"
    assert post(bearer(secret), url, {"decision": "rejected", "comment": "no"}).status_code == 200
    [entry] = entries(held)
    assert entry.user == owner
    assert entry.change_message == (
        f"Rejected; comment: 'no' (via api, as ci-bot (API token {token.key_prefix}…))"
    )


def test_a_service_tokens_cancel_is_filed_under_its_minter(api_env):
    root = User.objects.create_superuser("root", password="pw")
    run = RunFactory()  # pending, never started: cancelled directly
    _, secret = auth.api_token_create(
        name="svc",
        scopes=["runs:write"],
        user=None,
        actor=Actor(user=root, name="root", surface="admin"),
        repositories=[run.repo_full_name],
    )
    assert bearer(secret).post(f"/api/runs/{run.run_id}/cancel").status_code == 202
    [entry] = entries(run)
    assert entry.user == root and entry.change_message.startswith(
        "Cancellation requested (via api, as service (API token"
    )


def test_cancel_and_run_again_in_admin_are_on_both_runs_history(api_env):
    operator = staff(*VIEW, "runs.change_run", "runs.add_run")
    client = client_for(operator, csrf=True)
    run = run_create(repository=RepositoryFactory(full_name="acme/shop"))
    cancel = reverse("admin:runs_run_cancel", args=[run.pk])
    csrf_post(client, change_url(run), cancel, {})
    again = reverse("admin:runs_run_again", args=[run.pk])
    csrf_post(client, change_url(run), again, {})
    new = Run.objects.exclude(pk=run.pk).get()
    name = operator.get_username()
    assert [(e.action_flag, e.change_message) for e in entries(run)] == [
        (CHANGE, f"Cancellation requested (via admin, as {name})"),
        (CHANGE, f"Run again as run {new.pk} (via admin, as {name})"),
    ]
    assert [(e.action_flag, e.change_message) for e in entries(new)] == [
        (ADDITION, f"Started as a run again of run {run.pk} (via admin, as {name})"),
    ]
    assert f"Run again as run {new.pk}" in history(client, run)


def test_minting_and_revoking_in_admin_are_recorded_once_each():
    reader = ("runs.view_run", "runs.view_artifact", "approvals.view_approval")
    manager = staff("runs.add_apitoken", "runs.change_apitoken", "runs.view_apitoken", *reader)
    client = client_for(manager, csrf=True)
    add = reverse("admin:runs_apitoken_add")
    response = csrf_post(client, add, add, {"name": "ci", "scopes": ["runs:read"]})
    assert response.status_code == 200 and "will not be shown again" in response.content.decode()
    token = ApiToken.objects.get()
    assert token.user == manager and token.created_by == manager
    changelist = reverse("admin:runs_apitoken_changelist")
    csrf_post(
        client,
        changelist,
        changelist,
        {"action": "revoke_selected", "_selected_action": [token.pk]},
    )
    name = manager.get_username()
    assert [(e.user, e.action_flag, e.change_message) for e in entries(token)] == [
        (manager, ADDITION, f"Minted with scopes runs:read for {name} (via admin, as {name})"),
        (manager, CHANGE, f"Revoked (via admin, as {name})"),
    ]
    assert "Revoked (via admin" in history(client, token)


def test_repository_changes_in_admin_are_on_its_history_page():
    root = User.objects.create_superuser("root", password="pw")
    client = client_for(root)
    repository = RepositoryFactory(full_name="acme/shop", host="github")
    page = client.get(change_url(repository))
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update({"require_approval": "on", "webhook_branches": ""})
    response = client.post(change_url(repository), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Repository.objects.get().require_approval
    [entry] = entries(repository)
    assert entry.user == root and "Require approval" in entry.get_change_message()
    assert "Require approval" in history(client, repository)


def test_the_audit_list_filters_by_surface():
    root = User.objects.create_superuser("root", password="pw")
    run = RunFactory(status="passed")
    from amtp_site import audit

    audit.record(Actor(root, "root", "admin"), run, "by hand")
    audit.record(Actor(root, "root (API token amtp_x…)", "api"), run, "by script")
    client = client_for(root)
    url = reverse("admin:admin_logentry_changelist")
    api_only = client.get(url, {"surface": "api"})
    assert [e.change_message for e in api_only.context["cl"].result_list] == [
        "by script (via api, as root (API token amtp_x…))"
    ]
    assert client.get(url).context["cl"].result_count == 2
    assert client.post(reverse("admin:admin_logentry_add")).status_code == 403
