"""Least privilege at the API: a session gets exactly its Django permissions, a token exactly
its scopes, and nobody mints a token with more rights than they hold or revokes without the
change permission."""

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.test import Client

from access import auth
from access.models import ApiToken
from runs.models import Run
from tests.admin_helpers import staff
from tests.api_support import assert_problem, post
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db


def session(*perms) -> Client:
    client = Client()
    client.force_login(staff(*perms))
    return client


@pytest.fixture
def finished():
    """A finished run with an artifact and a decided approval: every write past authorization
    answers 409 (or 422), so no test here needs Temporal."""
    run = RunFactory(status="passed")
    ArtifactFactory(run=run)
    approval = ApprovalFactory(run=run, decision="approved", decided_at=run.created_at)
    return run, approval


def test_a_staff_session_with_only_view_run_cannot_start_or_cancel_a_run(finished):
    run, _ = finished
    RepositoryFactory(full_name="acme/shop")
    viewer = session("runs.view_run")
    body = assert_problem(post(viewer, "/api/runs", {"repo_full_name": "acme/shop"}), 403)
    assert body["detail"] == auth.MISSING_PERMISSION.format(
        action="starting runs", permission="'runs.add_run'"
    )
    body = assert_problem(viewer.post(f"/api/runs/{run.run_id}/cancel"), 403)
    assert body["detail"] == auth.MISSING_PERMISSION.format(
        action="cancelling runs", permission="'runs.change_run'"
    )
    assert Run.objects.count() == 1


def test_a_staff_session_without_view_run_cannot_read_runs(finished):
    run, _ = finished
    nobody = session()
    for path in ("/api/runs", f"/api/runs/{run.run_id}", f"/api/runs/{run.run_id}/context"):
        body = assert_problem(nobody.get(path), 403, "forbidden")
        assert "'runs.view_run'" in body["detail"]


def test_artifacts_need_what_the_artifact_admin_needs(finished):
    run, _ = finished
    path = f"/api/runs/{run.run_id}/artifacts/repo_crawler_output"
    assert_problem(session("runs.view_run").get(path), 403)
    assert session("runs.view_artifact").get(path).status_code == 200
    assert session("runs.change_artifact").get(path).status_code == 200


def test_approvals_list_needs_what_the_approval_admin_needs(finished):
    assert_problem(session("runs.view_run").get("/api/approvals"), 403)
    for perm in ("approvals.view_approval", "approvals.decide_approval"):
        assert session(perm).get("/api/approvals").status_code == 200


def test_each_write_passes_with_its_own_permission(finished):
    run, approval = finished
    RepositoryFactory(full_name="acme/shop")
    unregistered = {"repo_full_name": "acme/nope"}  # 422 after authorization: nothing created
    assert_problem(post(session("runs.add_run"), "/api/runs", unregistered), 422)
    assert_problem(session("runs.change_run").post(f"/api/runs/{run.run_id}/cancel"), 409)
    decision = f"/api/approvals/{approval.approval_id}/decision"
    assert_problem(post(session("approvals.decide_approval"), decision, {"decision": "x"}), 422)


def test_a_superuser_session_may_do_everything(finished):
    run, _ = finished
    root = Client()
    root.force_login(User.objects.create_superuser("root", password="pw"))
    assert root.get(f"/api/runs/{run.run_id}/artifacts/repo_crawler_output").status_code == 200
    assert_problem(root.post(f"/api/runs/{run.run_id}/cancel"), 409)


# --- minting and revoking tokens -------------------------------------------------------------


def test_a_user_mints_only_the_scopes_their_permissions_allow():
    minter = staff("runs.add_apitoken", "runs.view_run", "runs.view_artifact")
    assert auth.scopes_allowed(minter) == set()  # runs:read also lets one list approvals
    minter = staff(
        "runs.add_apitoken", "runs.view_run", "runs.view_artifact", "approvals.view_approval"
    )
    assert auth.scopes_allowed(minter) == {"runs:read"}
    with pytest.raises(PermissionDenied) as refused:
        auth.api_token_create(
            name="x", scopes=["runs:read", "approvals:decide"], user=minter, actor=actor(minter)
        )
    assert str(refused.value) == auth.SCOPES_BEYOND_RIGHTS.format(scopes="approvals:decide")
    token, _ = auth.api_token_create(
        name="ci", scopes=["runs:read"], user=minter, actor=actor(minter)
    )
    assert token.scopes == ["runs:read"] and token.created_by == minter
    assert ApiToken.objects.count() == 1


def test_minting_needs_the_add_permission_and_is_for_oneself():
    reader = ("runs.view_run", "runs.view_artifact", "approvals.view_approval")
    nobody = staff(*reader)
    with pytest.raises(PermissionDenied, match="runs.add_apitoken"):
        auth.api_token_create(name="x", scopes=["runs:read"], user=nobody, actor=actor(nobody))
    minter, other = staff("runs.add_apitoken", *reader), staff(*reader)
    RepositoryFactory(full_name="acme/shop")
    for owner in (other, None):  # another user's token, or a service token
        with pytest.raises(PermissionDenied) as refused:
            auth.api_token_create(
                name="x",
                scopes=["runs:read"],
                user=owner,
                actor=actor(minter),
                repositories=["acme/shop"],
            )
        assert str(refused.value) == auth.ONLY_FOR_ONESELF
    root = User.objects.create_superuser("root", password="pw")
    token, _ = auth.api_token_create(
        name="svc", scopes=["runs:write"], user=None, actor=actor(root), repositories=["acme/shop"]
    )
    assert token.user is None and token.created_by == root
    assert ApiToken.objects.count() == 1


def test_revoking_needs_the_change_permission():
    owner = staff("runs.view_run")
    token, _ = auth.api_token_create(name="t", scopes=["runs:read"], actor=None, user=owner)
    viewer = staff("runs.view_apitoken")
    with pytest.raises(PermissionDenied, match="runs.change_apitoken"):
        auth.api_token_revoke(token=token, actor=actor(viewer))
    token.refresh_from_db()
    assert token.revoked_at is None
    auth.api_token_revoke(token=token, actor=actor(staff("runs.change_apitoken")))
    token.refresh_from_db()
    assert token.revoked_at is not None


def actor(user):
    from amtp_site.audit import Actor

    return Actor(user=user, name=user.get_username(), surface="test")


def test_a_service_token_acts_as_its_minter_in_the_audit_trail():
    root = User.objects.create_superuser("root", password="pw")
    RepositoryFactory(full_name="acme/shop")
    token, secret = auth.api_token_create(
        name="svc", scopes=["runs:read"], user=None, actor=actor(root), repositories=["acme/shop"]
    )
    principal = auth.Principal.for_token(auth.api_token_authenticate(secret))
    assert principal.user == root and principal.name.startswith("service (API token")
