"""Access per repository: a role granted on repository A opens A and nothing else, in the
admin and the API alike; tokens narrowed to repositories; four eyes on approvals.

Two repositories, A (acme/shop) and B (acme/other), each with a finished run, an artifact and
an approval. A run the caller may not see answers exactly as a run that does not exist."""

import uuid

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group, Permission, User
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from access import auth
from access.models import ApiToken
from amtp_site.audit import Actor
from approvals.models import Approval
from approvals.services import SELF_APPROVAL, SELF_APPROVAL_AUDIT
from repositories import access
from repositories.models import RepositoryGrant
from runs.models import Run
from tests import api_support
from tests.admin_helpers import (
    APPROVALS,
    ARTIFACTS,
    RUNS,
    change_url,
    client_for,
    flashed,
    listed,
    staff,
)
from tests.api_support import assert_problem, bearer, post
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db
api_env, make_token = api_support.api_env, api_support.make_token

LAUNCH = reverse("launch_run")


class Repo:
    def __init__(self, name: str) -> None:
        self.repository = RepositoryFactory(full_name=name)
        self.run = RunFactory(repository=self.repository, status="passed")
        self.artifact = ArtifactFactory(run=self.run)
        self.approval = ApprovalFactory(
            run=self.run, decision="approved", decided_at=timezone.now()
        )


@pytest.fixture
def a():
    return Repo("acme/shop")


@pytest.fixture
def b():
    return Repo("acme/other")


def granted(role: str, *repos: Repo) -> User:
    """A staff user with no Django permission at all and ``role`` on each of ``repos``."""
    user = staff()
    for repo in repos:
        RepositoryGrant.objects.create(repository=repo.repository, user=user, role=role)
    return user


def api_paths(repo: Repo) -> list[str]:
    run = repo.run.run_id
    return [
        f"/api/runs/{run}",
        f"/api/runs/{run}/context",
        f"/api/runs/{run}/artifacts/{repo.artifact.kind}",
    ]


def test_a_viewer_of_A_sees_only_As_runs_in_the_api(a, b):
    client = client_for(granted("viewer", a))
    listed_runs = client.get("/api/runs").json()["items"]
    assert [r["run_id"] for r in listed_runs] == [str(a.run.run_id)]
    approvals = client.get("/api/approvals").json()["items"]
    assert [x["approval_id"] for x in approvals] == [str(a.approval.approval_id)]
    for path in api_paths(a):
        assert client.get(path).status_code == 200, path
    unknown = assert_problem(client.get(f"/api/runs/{uuid.uuid4()}"), 404)
    for path in api_paths(b):  # 404, and the very body of a run that does not exist
        body = assert_problem(client.get(path), 404)
        assert (body["detail"], body["type"]) == (unknown["detail"], unknown["type"])
    assert client.get("/api/runs", {"repository": "acme/other"}).json()["items"] == []


def test_a_viewer_of_A_sees_only_As_runs_in_the_admin(a, b):
    client = client_for(granted("viewer", a))
    assert listed(client.get(RUNS)) == {a.run.pk}
    assert listed(client.get(ARTIFACTS)) == {a.artifact.pk}
    assert listed(client.get(APPROVALS, {"decision": "all"})) == {a.approval.pk}
    assert client.get(change_url(a.run)).status_code == 200
    for obj in (b.run, b.artifact, b.approval):  # as an object that does not exist
        response = client.get(change_url(obj))
        assert response.status_code in (302, 404), obj
        assert response.status_code == 404 or response["Location"] == reverse("admin:index")
    filter_choices = client.get(RUNS).content.decode()
    assert "acme/shop" in filter_choices and "acme/other" not in filter_choices
    history = reverse("admin:runs_run_history", args=[b.run.pk])
    assert client.get(history)["Location"] == reverse("admin:index")


def test_evidence_needs_the_artifact_right_and_is_404_elsewhere(a, b):
    def evidence(client, repo):
        return client.get(reverse("admin:runs_run_evidence", args=[repo.run.pk, "trace.zip"]))

    viewer = client_for(granted("viewer", a))
    assert evidence(viewer, b).status_code == 404
    assert evidence(viewer, a).status_code == 404  # visible, with no such file
    runs_only = client_for(staff("runs.view_run"))  # the run, but not its artifacts
    assert evidence(runs_only, a).status_code == 403


def test_an_operator_of_A_cannot_launch_or_cancel_on_B(a, b, valkey):
    operator = granted("operator", a)
    client = client_for(operator)
    unregistered = assert_problem(post(client, "/api/runs", {"repo_full_name": "acme/nope"}), 422)
    on_b = assert_problem(post(client, "/api/runs", {"repo_full_name": "acme/other"}), 422)
    assert on_b["detail"] == unregistered["detail"].replace("nope", "other")
    assert_problem(client.post(f"/api/runs/{b.run.run_id}/cancel"), 404)
    assert_problem(client.post(f"/api/runs/{a.run.run_id}/cancel"), 409)  # allowed: finished
    form = client.get(LAUNCH).context["form"]
    assert list(form.fields["repository"].queryset) == [a.repository]
    data = {"repository": b.repository.pk, "submission": str(uuid.uuid4())}
    assert "repository" in client.post(LAUNCH, data).context["form"].errors
    assert client.post(reverse("admin:runs_run_cancel", args=[b.run.pk])).status_code == 404
    again = client.post(reverse("admin:runs_run_again", args=[b.run.pk]))
    assert again.status_code == 404
    assert Run.objects.count() == 2  # nothing started anywhere


def test_a_viewer_who_tries_to_cancel_gets_403_naming_the_rule(a, b):
    viewer, operator_of_b = granted("viewer", a), granted("operator", b)
    # No right to cancel anywhere: the gate says which permission.
    body = assert_problem(client_for(viewer).post(f"/api/runs/{a.run.run_id}/cancel"), 403)
    assert "runs.change_run" in body["detail"]
    # The right elsewhere, only sight here: the rule of this repository.
    RepositoryGrant.objects.create(repository=a.repository, user=operator_of_b, role="viewer")
    client = client_for(operator_of_b)
    body = assert_problem(client.post(f"/api/runs/{a.run.run_id}/cancel"), 403)
    assert body["detail"] == access.refusal("cancelling runs", "acme/shop", ["runs.change_run"])
    assert "operator or admin" in body["detail"]
    response = client.post(reverse("admin:runs_run_cancel", args=[a.run.pk]))
    assert response.status_code == 403


def test_a_group_grant_counts_and_a_global_permission_reaches_everything(a, b):
    team = Group.objects.create(name="shop-team")
    RepositoryGrant.objects.create(repository=a.repository, group=team, role="viewer")
    member = staff()
    member.groups.add(team)
    assert client_for(member).get("/api/runs").json()["count"] == 1
    everywhere = staff("runs.view_run")  # the way small teams work: no grant needed
    assert client_for(everywhere).get("/api/runs").json()["count"] == 2
    assert member.has_perm("runs.view_run", a.run) and not member.has_perm("runs.view_run", b.run)
    assert member.has_perm("runs.view_run") and not member.has_perm("runs.change_run")
    assert member.has_module_perms("runs") and not member.has_module_perms("auth")


def test_a_users_grants_are_read_in_one_query_that_sorts_nothing(a, b):
    # Every request that checks a permission reads them: no join, no sort of repositories.
    user = granted("viewer", a, b)
    with CaptureQueriesContext(connection) as queries:
        assert user.has_perm("runs.view_run", a.run) and user.has_perm("runs.view_run", b.run)
    reads = [q["sql"] for q in queries.captured_queries if "repository_grants" in q["sql"]]
    assert len(reads) == 1, reads
    assert "JOIN" not in reads[0] and "ORDER BY" not in reads[0], reads[0]


def test_a_grant_names_exactly_one_principal_once_per_repository(a):
    user, group = staff(), Group.objects.create(name="g")
    for fields in ({}, {"user": user, "group": group}, {"user": user, "role": "owner"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            RepositoryGrant.objects.create(repository=a.repository, **{"role": "viewer", **fields})
    RepositoryGrant.objects.create(repository=a.repository, user=user, role="viewer")
    with pytest.raises(IntegrityError), transaction.atomic():
        RepositoryGrant.objects.create(repository=a.repository, user=user, role="admin")
    assert RepositoryGrant.objects.count() == 1


# --- tokens ----------------------------------------------------------------------------------


def test_a_token_limited_to_A_gets_404_on_B_and_cannot_start_runs_there(a, b, valkey):
    owner = User.objects.create_superuser("root", password=None)
    secret = auth.api_token_create(
        name="ci", scopes=api_support.ALL_SCOPES, user=owner, actor=None, repositories=["acme/shop"]
    )[1]
    client = bearer(secret)
    assert [r["run_id"] for r in client.get("/api/runs").json()["items"]] == [str(a.run.run_id)]
    for path in api_paths(b):
        assert_problem(client.get(path), 404)
    assert_problem(client.post(f"/api/runs/{b.run.run_id}/cancel"), 404)
    assert_problem(post(client, "/api/runs", {"repo_full_name": "acme/other"}), 422)
    assert not Run.objects.filter(repository=b.repository, status="pending").exists()
    assert post(client, "/api/runs", {"repo_full_name": "acme/shop"}).status_code == 201


def test_a_token_gets_at_most_its_owners_grants(a, b):
    owner = granted("viewer", a)
    secret = auth.api_token_create(
        name="ci", scopes=["runs:read"], user=owner, actor=None, repositories=["acme/other"]
    )[1]
    assert bearer(secret).get("/api/runs").json()["items"] == []  # the list ∩ the owner's


def test_a_service_token_without_repositories_cannot_be_minted(a):
    root = User.objects.create_superuser("root", password=None)
    actor = Actor(root, "root", "admin")
    for names in (None, []):
        with pytest.raises(ValueError) as refused:
            auth.api_token_create(name="svc", scopes=["runs:read"], actor=actor, repositories=names)
        assert str(refused.value) == auth.SERVICE_TOKEN_NEEDS_REPOSITORIES
    form = client_for(root).post(
        reverse("admin:runs_apitoken_add"), {"name": "svc", "scopes": ["runs:read"]}
    )
    assert form.context["adminform"].form.errors["repositories"] == [
        auth.SERVICE_TOKEN_NEEDS_REPOSITORIES.removeprefix("repositories: ")
    ]
    with pytest.raises(IntegrityError), transaction.atomic():  # nor written by hand
        ApiToken.objects.create(name="svc", key_prefix="amtp_x", token_hash="1" * 64)
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    "names",
    [
        ["acme/nope"],
        ["acme/other"],  # exists, but the minter may not see it: the same answer
        ["acme/shop' OR '1'='1"],
        ["acme/shop", "x" * 5000],
        ["\x00"],
    ],
)
def test_a_token_names_only_repositories_its_minter_may_see(a, b, names):
    minter = granted("viewer", a)
    minter.user_permissions.add(Permission.objects.get(codename="add_apitoken"))
    minter = User.objects.get(pk=minter.pk)
    actor = Actor(minter, minter.username, "admin")
    with pytest.raises(ValueError) as refused:
        auth.api_token_create(
            name="ci", scopes=["runs:read"], user=minter, actor=actor, repositories=names
        )
    assert str(refused.value).startswith("repositories: no repository ")
    assert not ApiToken.objects.exists()
    token, _ = auth.api_token_create(
        name="ci", scopes=["runs:read"], user=minter, actor=actor, repositories=["acme/shop"]
    )
    assert token.repository_ids == [a.repository.pk]


# --- four eyes -------------------------------------------------------------------------------


@pytest.fixture
def own_hold(a, api_env):
    """A pending approval on A whose run was requested through the API by ``approver``'s
    token; the workflow started (no worker), so an allowed decision signals it."""
    from runs.temporal.dispatcher import run_starts_dispatch

    approver = granted("admin", a)  # may launch and decide on A
    secret = auth.api_token_create(
        name="mine", scopes=api_support.ALL_SCOPES, user=approver, actor=None
    )[1]
    created = post(bearer(secret), "/api/runs", {"repo_full_name": "acme/shop"})
    run = Run.objects.get(pk=created.json()["run_id"])
    assert run.requester == f"user:{approver.pk}"
    run_starts_dispatch()
    approval = ApprovalFactory(run=run, stage=run.stages.get(name="create_pull_request"))
    return approver, secret, approval


def refused_and_audited(approval: Approval, user) -> None:
    approval.refresh_from_db()
    assert approval.decision == "pending"
    [entry] = LogEntry.objects.filter(object_id=str(approval.pk))
    assert entry.user_id == user.pk and entry.change_message.startswith(
        SELF_APPROVAL_AUDIT.format(decision="approved")
    )


def test_the_requesters_own_approval_is_refused_in_the_api(own_hold):
    approver, secret, approval = own_hold
    url = f"/api/approvals/{approval.pk}/decision"
    session = client_for(approver)  # the same person through a session: refused too
    for client in (bearer(secret), session):
        body = assert_problem(post(client, url, {"decision": "approved"}), 403, "forbidden")
        assert body["detail"] == SELF_APPROVAL.format(
            run_id=approval.run_id, repository="acme/shop"
        )
    approval.refresh_from_db()
    assert approval.decision == "pending"
    assert LogEntry.objects.filter(object_id=str(approval.pk)).count() == 2


def test_the_requesters_own_approval_is_refused_in_the_admin(own_hold):
    approver, _, approval = own_hold
    url = reverse("admin:approvals_approval_decide", args=[approval.pk])
    response = client_for(approver).post(url, {"decision": "approved"})
    assert response.status_code == 302
    assert flashed(response) == [
        SELF_APPROVAL.format(run_id=approval.run_id, repository="acme/shop")
    ]
    refused_and_audited(approval, approver)


def test_someone_else_decides_the_requesters_run(own_hold, a):
    _, _, approval = own_hold
    other = client_for(granted("approver", a))
    response = post(other, f"/api/approvals/{approval.pk}/decision", {"decision": "approved"})
    assert response.status_code == 200, response.content
    approval.refresh_from_db()
    assert approval.decision == "approved"


def test_a_repository_may_allow_self_approval(own_hold, a):
    _, secret, approval = own_hold
    a.repository.allow_self_approval = True
    a.repository.save()
    url = f"/api/approvals/{approval.pk}/decision"
    assert post(bearer(secret), url, {"decision": "approved"}).status_code == 200
    approval.refresh_from_db()
    assert approval.decision == "approved"


def test_a_service_token_cannot_approve_the_run_it_started(a, api_env):
    root = User.objects.create_superuser("root", password=None)
    actor = Actor(root, "root", "admin")
    token, secret = auth.api_token_create(
        name="svc", scopes=api_support.ALL_SCOPES, actor=actor, repositories=["acme/shop"]
    )
    created = post(bearer(secret), "/api/runs", {"repo_full_name": "acme/shop"})
    run = Run.objects.get(pk=created.json()["run_id"])
    assert run.requester == f"token:{token.pk}"
    approval = ApprovalFactory(run=run, stage=run.stages.get(name="create_pull_request"))
    url = f"/api/approvals/{approval.pk}/decision"
    assert_problem(post(bearer(secret), url, {"decision": "approved"}), 403)
    refused_and_audited(approval, root)  # filed under the minter, as its other actions
