"""/api/approvals: listing, deciding (which signals the workflow), scopes and permissions;
and the admin that creates API tokens (secret shown once) and revokes them."""

import re
import uuid

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from access import auth
from access.models import ApiToken
from approvals.models import Approval
from approvals.services import ALREADY_DECIDED
from runs.models import Run
from runs.temporal.dispatcher import run_starts_dispatch
from tests import api_support
from tests.api_support import assert_problem, bearer, post, signals_of
from tests.factories import ApprovalFactory

pytestmark = pytest.mark.django_db

api_env, make_token, client, repo, staff = (
    api_support.api_env,
    api_support.make_token,
    api_support.client,
    api_support.repo,
    api_support.staff,
)


# --- approvals -------------------------------------------------------------------------------


def test_list_pending_approvals(client):
    pending = ApprovalFactory()
    ApprovalFactory(decision="approved", decided_at=timezone.now())
    items = client.get("/api/approvals", {"decision": "pending"}).json()["items"]
    assert [i["approval_id"] for i in items] == [str(pending.approval_id)]
    assert client.get("/api/approvals").json()["count"] == 2


@pytest.fixture
def held_run(make_token, repo, api_env):
    """A started workflow (no worker) with a pending approval on its PR stage, requested by
    someone else than ``client``'s owner (four eyes)."""
    requester = bearer(make_token(user=User.objects.create_superuser("requester", password=None)))
    run = Run.objects.get(
        pk=post(requester, "/api/runs", {"repo_full_name": "acme/shop"}).json()["run_id"]
    )
    run_starts_dispatch()  # what a worker's dispatcher does
    stage = run.stages.get(name="create_pull_request")
    return ApprovalFactory(run=run, stage=stage)


def test_decide_approval_signals_the_workflow_and_twice_is_409(client, held_run):
    url = f"/api/approvals/{held_run.approval_id}/decision"
    response = post(client, url, {"decision": "approved", "comment": "go"})
    assert response.status_code == 200, response.content
    assert response.json()["decision"] == "approved"
    held_run.refresh_from_db()
    assert (held_run.decision, held_run.decision_comment) == ("approved", "go")
    assert "API token" in held_run.decided_by
    assert signals_of(held_run.run_id) == ["approval_decided"]
    again = assert_problem(
        post(client, url, {"decision": "rejected", "comment": "too late"}),
        409,
        "approval-already-decided",
    )
    assert again["detail"] == ALREADY_DECIDED.format(
        approval_id=held_run.approval_id, decision="approved", by=held_run.decided_by
    )


@pytest.mark.parametrize(
    "body,field",
    [
        ({"decision": "maybe"}, "decision"),
        ({"decision": "approved", "by": "me"}, "by"),
        ({"comment": "no decision"}, "decision"),
        ({"decision": "approved", "comment": 5}, "comment"),
    ],
)
def test_bad_decisions_are_422_and_change_nothing(client, body, field):
    approval = ApprovalFactory()
    problem = assert_problem(
        post(client, f"/api/approvals/{approval.approval_id}/decision", body), 422
    )
    assert field in {e["field"] for e in problem["errors"]}
    assert Approval.objects.get().decision == "pending"


def test_deciding_needs_the_scope_or_the_permission(make_token, staff):
    approval = ApprovalFactory()
    url = f"/api/approvals/{approval.approval_id}/decision"
    body = {"decision": "rejected"}
    problem = assert_problem(post(bearer(make_token("runs:read", "runs:write")), url, body), 403)
    assert problem["detail"] == auth.MISSING_SCOPE.format(scope="approvals:decide")
    session = Client()
    session.force_login(staff)
    problem = assert_problem(post(session, url, body), 403)
    assert (
        problem["detail"]
        == auth.DECIDE_APPROVALS.refusal()
        == ("deciding approvals needs the 'approvals.decide_approval' permission for session users")
    )
    assert Approval.objects.get().decision == "pending"
    staff.user_permissions.add(Permission.objects.get(codename="decide_approval"))
    staff = User.objects.get(pk=staff.pk)
    session.force_login(staff)
    assert auth.Principal.for_user(staff).scopes >= {"approvals:decide"}


def test_unknown_approval_is_404(client):
    assert_problem(
        post(client, f"/api/approvals/{uuid.uuid4()}/decision", {"decision": "approved"}), 404
    )


# --- admin: tokens -----------------------------------------------------------------------------


def test_admin_shows_a_new_secret_once_and_revokes(rf, monkeypatch):
    from django.contrib import admin

    from access.admin.tokens import REVOKED, ApiTokenAdmin

    model_admin = ApiTokenAdmin(ApiToken, admin.site)
    request = rf.post("/admin/runs/apitoken/add/")
    request.user = User.objects.create_superuser("root")
    data = {"name": "ci", "user": request.user.pk, "scopes": ["runs:read", "runs:write"]}
    form = model_admin.get_form(request)(data=data)
    assert form.is_valid(), form.errors
    token = form.save(commit=False)
    model_admin.save_model(request, token, form, change=False)
    page = model_admin.response_add(request, token).content.decode()
    secret = re.search(r'value="(amtp_[^"]+)"', page).group(1)
    assert "will not be shown again" in page and secret not in str(list(ApiToken.objects.values()))
    assert ApiToken.objects.get().scopes == ["runs:read", "runs:write"]
    assert bearer(secret).get("/api/runs").status_code == 200
    said = []
    monkeypatch.setattr(model_admin, "message_user", lambda request, text, level: said.append(text))
    model_admin.revoke_selected(request, ApiToken.objects.all())
    assert said == [REVOKED.format(count=1)]
    assert_problem(bearer(secret).get("/api/runs"), 401)
