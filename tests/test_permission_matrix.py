"""The permission matrix of docs/security.md, cell by cell, through the API and the admin.

The table is read from the document, so the document and the code cannot drift apart: every
row names an action performed below, every column a role built below. Roles are granted on
repository A (acme/shop); B (acme/other) is another. An action is *allowed* when it gets past
authorization (e.g. cancelling a finished run is a 409, not a 403); one is denied when it is
401, 403, or (for what the caller may not see) 404 or "not registered"."""

import json
import re
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as site_settings
from django.contrib.auth.models import Group, Permission, User
from django.db import transaction
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from access import auth
from access.models import ApiToken, OidcTrustRule
from amtp_site import sso
from approvals.models import Approval
from repositories.models import Repository, RepositoryGrant
from runs.models import Run
from tests.admin_helpers import flashed
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory
from tests.fakes.oidc_issuer import AUDIENCE, FakeIssuer

DOC = Path(__file__).resolve().parent.parent / "docs" / "security.md"
VIEWER = ("runs.view_run", "runs.view_artifact", "approvals.view_approval")
ROLES = {  # permissions held the ordinary way: on every repository
    "staff": (),
    "global operator": (
        *VIEWER,
        "repositories.view_repository",
        "runs.add_run",
        "runs.change_run",
    ),
    "token admin": (
        *VIEWER,
        "repositories.view_repository",
        "runs.add_apitoken",
        "runs.change_apitoken",
        "runs.view_apitoken",
    ),
}
GRANTS = {"viewer", "operator", "approver", "admin"}  # a role on A, no permission of one's own
TOKENS = {  # service tokens limited to A
    "read token": "runs:read",
    "write token": "runs:write",
    "decide token": "approvals:decide",
}
CI = "CI token"  # A's CI by OIDC (access.oidc): a trust rule on A with runs:read and runs:write
# Signed in through the identity provider (amtp_site.sso): its groups claim names a group mapped
# to one with the operator role on A, and "admins", which is not mapped although a Django group
# of that name holds global rights.
SSO = "SSO operator"
SSO_GROUPS = {"shop-operators": ("Shop operators",)}


class FreshTokenClient(Client):
    """Sends a new OIDC token with every request (each token is good for one use: jti)."""

    def __init__(self, issuer, repository: str) -> None:
        super().__init__()
        self.issuer, self.repository = issuer, repository

    def request(self, **request):
        request["HTTP_AUTHORIZATION"] = f"Bearer {self.issuer.mint(self.repository)}"
        return super().request(**request)


def matrix() -> list[tuple[str, str, bool]]:
    text = DOC.read_text().split("### Permission matrix", 1)[1]
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start:]:  # the first table of the section, to its end
        if not line.startswith("|"):
            break
        table.append(line)
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table]
    header, body = rows[0], rows[2:]
    cells = []
    for row in body:
        for role, mark in zip(header[1:], row[1:], strict=True):
            if mark != "·":
                cells.append((row[0], role, mark == "✓"))
    return cells


class Place:
    """A repository with a finished run, its artifact and its decided approval."""

    def __init__(self, name: str) -> None:
        self.repository = RepositoryFactory(full_name=name)
        self.finished = RunFactory(repository=self.repository, status="passed")
        self.artifact = ArtifactFactory(run=self.finished)
        self.decided = ApprovalFactory(
            run=self.finished, decision="approved", decided_at=timezone.now()
        )


class World:
    """The objects every action works on, and the caller in one role."""

    def __init__(self, role: str, issuer=None) -> None:
        self.role, self.issuer = role, issuer
        self.root = User.objects.create_superuser("root", password=None)  # no slow hashing
        self.other = self._with_perms(User.objects.create_user("someone-else"), VIEWER)
        self.a, self.b = Place("acme/shop"), Place("acme/other")
        self.repository, self.finished = self.a.repository, self.a.finished
        self.artifact, self.decided = self.a.artifact, self.a.decided
        # Pending approvals (runs never started): one requested by someone else, one by the
        # caller (its requester is set once the caller exists).
        self.held = RunFactory(repository=self.repository, requester=f"user:{self.other.pk}")
        self.pending = ApprovalFactory(run=self.held)
        self.own = RunFactory(repository=self.repository)
        self.own_pending = ApprovalFactory(run=self.own)
        self.token = ApiToken.objects.create(
            name="old", key_prefix="amtp_x", token_hash="0" * 64, user=self.root
        )
        self.user = self._user()
        self._credentials()
        Run.objects.filter(pk=self.own.pk).update(requester=self.identity)
        self.client: Client | None = None  # a new one for every case: fresh_client()

    def _user(self):
        if self.role in ("anonymous", *TOKENS, CI):
            return None
        if self.role == "superuser":
            return self.root
        if self.role == SSO:
            return self._sso_user()
        user = User.objects.create_user(self.role.replace(" ", "-"), is_staff=True)
        if self.role in GRANTS:
            RepositoryGrant.objects.create(repository=self.repository, user=user, role=self.role)
            return User.objects.get(pk=user.pk)
        return self._with_perms(user, ROLES[self.role])

    def _sso_user(self):
        """The user a sign-in with these claims makes (the backend's own code; the flow itself
        is tests/test_sso.py's)."""
        operators = Group.objects.create(name=SSO_GROUPS["shop-operators"][0])
        RepositoryGrant.objects.create(repository=self.repository, group=operators, role="operator")
        admins = Group.objects.create(name="admins")
        for perm in ROLES["global operator"]:
            app, codename = perm.split(".")
            admins.permissions.add(
                Permission.objects.get(content_type__app_label=app, codename=codename)
            )
        claims = {"sub": "00u-sam", "given_name": "Sam", "groups": ["shop-operators", "admins"]}
        user = sso.SsoBackend().create_user(claims)
        assert sorted(user.groups.values_list("name", flat=True)) == ["Shop operators"]
        return User.objects.get(pk=user.pk)

    @staticmethod
    def _with_perms(user, perms):
        for perm in perms:
            app, codename = perm.split(".")
            user.user_permissions.add(
                Permission.objects.get(content_type__app_label=app, codename=codename)
            )
        return User.objects.get(pk=user.pk)  # a fresh permission cache

    def _credentials(self) -> None:
        """Who the caller is to the server, and what its clients present: a bearer secret, a
        fresh OIDC token per request, or the cookie of a session made here."""
        self.identity = f"user:{self.user.pk}" if self.user else "user:0"
        self.secret = self.session_key = None
        if self.role in TOKENS:
            token, self.secret = auth.api_token_create(
                name="t", scopes=[TOKENS[self.role]], actor=None, repositories=["acme/shop"]
            )
            self.identity = f"token:{token.pk}"
        elif self.role == CI:
            rule = OidcTrustRule.objects.create(
                name="shop-ci",
                repository_ids=[self.repository.pk],
                scopes=["runs:read", "runs:write"],
                created_by=self.root,
            )
            self.identity = f"oidc:{rule.pk}:{self.repository.pk}"
        elif self.user is not None:
            client = Client()
            if self.role == SSO:
                client.force_login(self.user, backend="amtp_site.sso.SsoBackend")
                session = client.session
                session["oidc_id_token_expiration"] = time.time() + 3600  # checked a moment ago
                session.save()
            else:
                client.force_login(self.user)
            self.session_key = client.cookies[site_settings.SESSION_COOKIE_NAME].value

    def fresh_client(self) -> Client:
        """A client with no cookie but the session's (no messages of an earlier case)."""
        if self.secret is not None:
            return Client(headers={"Authorization": f"Bearer {self.secret}"})
        if self.role == CI:
            return FreshTokenClient(self.issuer, self.repository.full_name)
        client = Client()
        if self.session_key is not None:
            client.cookies[site_settings.SESSION_COOKIE_NAME] = self.session_key
        return client

    # --- how an answer reads --------------------------------------------------------------

    @staticmethod
    def api_allowed(response, hidden=(404,)) -> bool:
        assert response.status_code < 500, response.content
        return response.status_code not in (401, 403, *hidden)

    @staticmethod
    def admin_allowed(response) -> bool:
        assert response.status_code < 500, response.content
        if response.status_code in (403, 404):
            return False
        if response.status_code == 302:
            return "/login/" not in response["Location"]
        return response.status_code == 200

    def api_get(self, path: str) -> bool:
        return self.api_allowed(self.client.get(path))

    def api_post(self, path: str, body: dict | None = None, hidden=(404,)) -> bool:
        data = json.dumps(body or {})
        response = self.client.post(path, data, content_type="application/json")
        return self.api_allowed(response, hidden)

    def admin_get(self, url: str) -> bool:
        response = self.client.get(url)  # a page one may not see redirects to the index
        assert response.status_code < 500, response.content
        return response.status_code == 200

    def admin_post(self, url: str, data: dict) -> bool:
        return self.admin_allowed(self.client.post(url, data))

    def mint(self, scopes: list[str], owner=None) -> bool:
        data = {"name": "minted", "scopes": scopes}
        if owner is not None:
            data["user"] = owner.pk
        elif self.user is not None and self.user.is_superuser:
            data["user"] = self.user.pk  # for oneself
        self.client.post(reverse("admin:runs_apitoken_add"), data)
        minted = ApiToken.objects.filter(name="minted", scopes=sorted(scopes))
        return minted.filter(user=owner or self.user).exists() if self.user else False


def change_repository(world: World, place: Place | None = None) -> bool:
    repository = (place or world.a).repository
    url = reverse("admin:repositories_repository_change", args=[repository.pk])
    root = Client()
    root.force_login(world.root)
    form = root.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update({"webhook_branches": "", "require_approval": "on"})
    world.admin_post(url, data)
    return Repository.objects.get(pk=repository.pk).require_approval


def run_again(world: World) -> bool:
    world.admin_post(reverse("admin:runs_run_again", args=[world.finished.pk]), {})
    return Run.objects.filter(requested_by=getattr(world.user, "username", "-")).exists()


def launch(world: World, place: Place) -> bool:
    data = {"repository": place.repository.pk, "submission": str(uuid.uuid4())}
    world.client.post(reverse("launch_run"), data)
    return Run.objects.filter(repository=place.repository, trigger="form").exists()


def start(world: World, place: Place) -> bool:
    body = json.dumps({"repo_full_name": place.repository.full_name})
    response = world.client.post("/api/runs", body, content_type="application/json")
    assert response.status_code < 500, response.content
    return response.status_code in (200, 201)  # 422 "not registered": one it may not see


def decide(world: World, approval: Approval) -> bool:
    """Past authorization and the four-eyes rule (Temporal is down here: a decision that
    passes both is put back to pending, with a message saying so)."""
    url = reverse("admin:approvals_approval_decide", args=[approval.pk])
    response = world.client.post(url, {"decision": "rejected", "comment": "no"})
    refused = any("four eyes" in message for message in flashed(response))
    return world.admin_allowed(response) and not refused


def grant(world: World) -> bool:
    data = {"repository": world.repository.pk, "user": world.other.pk, "role": "viewer"}
    world.client.post(reverse("admin:repositories_repositorygrant_add"), data)
    return RepositoryGrant.objects.filter(user=world.other).exists()


def revoke(world: World) -> bool:
    data = {"action": "revoke_selected", "_selected_action": [world.token.pk]}
    world.client.post(reverse("admin:runs_apitoken_changelist"), data)
    return ApiToken.objects.get(pk=world.token.pk).revoked_at is not None


def run_path(world: World, place: Place, tail: str = "") -> str:
    return f"/api/runs/{place.finished.pk}{tail}"


ACTIONS = {
    "API: list runs": lambda w: w.api_get("/api/runs"),
    "API: read a run": lambda w: w.api_get(run_path(w, w.a)),
    "API: read a run's context": lambda w: w.api_get(run_path(w, w.a, "/context")),
    "API: read an artifact": lambda w: w.api_get(run_path(w, w.a, f"/artifacts/{w.artifact.kind}")),
    "API: list approvals": lambda w: w.api_get("/api/approvals"),
    "API: start a run": lambda w: start(w, w.a),
    # A finished run, a decided approval: past authorization, nothing moves (409).
    "API: cancel a run": lambda w: w.api_post(run_path(w, w.a, "/cancel")),
    "API: decide an approval": lambda w: w.api_post(
        f"/api/approvals/{w.decided.pk}/decision", {"decision": "approved"}
    ),
    "API: decide an approval of a run one requested": lambda w: w.api_post(
        f"/api/approvals/{w.own_pending.pk}/decision", {"decision": "approved"}
    ),
    "API: read a run of B": lambda w: w.api_get(run_path(w, w.b)),
    "API: start a run on B": lambda w: start(w, w.b),
    "API: cancel a run of B": lambda w: w.api_post(run_path(w, w.b, "/cancel")),
    "API: a repository's health": lambda w: w.api_get("/api/repositories/acme/shop/health"),
    "API: repository B's health": lambda w: w.api_get("/api/repositories/acme/other/health"),
    "admin: list runs": lambda w: w.admin_get(reverse("admin:runs_run_changelist")),
    "admin: a run's history": lambda w: w.admin_get(
        reverse("admin:runs_run_history", args=[w.finished.pk])
    ),
    "admin: view an artifact": lambda w: w.admin_get(
        reverse("admin:runs_artifact_change", args=[w.artifact.pk])
    ),
    "admin: the approval queue": lambda w: w.admin_get(
        reverse("admin:approvals_approval_changelist")
    ),
    "admin: launch a run": lambda w: launch(w, w.a),
    "admin: cancel a run": lambda w: w.admin_post(
        reverse("admin:runs_run_cancel", args=[w.finished.pk]), {}
    ),
    "admin: run again": run_again,
    "admin: approve or reject": lambda w: decide(w, w.pending),
    "admin: approve or reject a run one requested": lambda w: decide(w, w.own_pending),
    "admin: change a repository": change_repository,
    "admin: a run of B": lambda w: w.admin_get(
        reverse("admin:runs_run_change", args=[w.b.finished.pk])
    ),
    "admin: launch a run on B": lambda w: launch(w, w.b),
    "admin: change repository B": lambda w: change_repository(w, w.b),
    "admin: a repository's health": lambda w: w.admin_get(
        reverse("repository_health", args=[w.a.repository.pk])
    ),
    "admin: repository B's health": lambda w: w.admin_get(
        reverse("repository_health", args=[w.b.repository.pk])
    ),
    "admin: grant a role": grant,
    "admin: mint a runs:read token for oneself": lambda w: w.mint(["runs:read"]),
    "admin: mint an approvals:decide token": lambda w: w.mint(["approvals:decide"]),
    "admin: mint a token for another user": lambda w: w.mint(["runs:read"], owner=w.other),
    "admin: revoke a token": revoke,
    "admin: the audit trail": lambda w: w.admin_get(reverse("admin:admin_logentry_changelist")),
}


@pytest.fixture(scope="module")
def issuer():
    with FakeIssuer() as running:
        yield running


def role_settings(role: str, issuer) -> dict:
    """The settings a case of this role runs with."""
    # Nothing here may need a workflow to succeed.
    values = {"TEMPORAL_ADDRESS": "127.0.0.1:1"}
    if role == CI:
        values.update(AMTP_OIDC_ISSUER=issuer.url, AMTP_OIDC_AUDIENCE=AUDIENCE)
    if role == SSO:  # signed in through an identity provider (never asked here)
        values.update(AMTP_SSO_ISSUER="https://idp.example.com", AMTP_SSO_GROUP_MAP=SSO_GROUPS)
    return values


def test_every_row_of_the_matrix_is_an_action_here():
    assert {action for action, _, _ in matrix()} == set(ACTIONS)
    roles = {"anonymous", "superuser", *ROLES, *GRANTS, *TOKENS, CI, SSO}
    assert {role for _, role, _ in matrix()} == roles


def pytest_generate_tests(metafunc):
    """A role's class gets the cells of its column."""
    if "action" in metafunc.fixturenames:
        role = metafunc.cls.role
        cells = [(action, allowed) for action, r, allowed in matrix() if r == role]
        metafunc.parametrize("action,allowed", cells, ids=str)


@pytest.fixture(scope="class")
def world(request, django_db_setup, django_db_blocker):
    """The world of the class's role, built once in a transaction of its own; each case runs
    in a savepoint of it that is rolled back after the case (Django's
    ``TestCase.setUpTestData``), so every case starts from the state built for the role,
    whatever the case before it wrote."""
    role = request.cls.role
    issuer = request.getfixturevalue("issuer") if role == CI else None
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            with override_settings(**role_settings(role, issuer)):
                built = World(role, issuer)
        except BaseException:
            atomic.__exit__(*sys.exc_info())
            raise
    yield built
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        atomic.__exit__(None, None, None)


@pytest.mark.django_db
class RoleCases:
    """The cases of one role (a subclass per role, below), on one world (``world``)."""

    role: str

    @pytest.fixture
    def case(self, world, settings, valkey):
        """The world with the role's settings and a new client (no cookie of a case before)."""
        for name, value in role_settings(world.role, world.issuer).items():
            setattr(settings, name, value)
        world.client = world.fresh_client()
        return world

    @pytest.mark.parametrize("turn", [1, 2])
    def test_a_case_starts_from_the_state_built_for_its_role(self, case, turn):
        """Twice in a row: what the first turn wrote is gone in the second."""
        assert not RepositoryGrant.objects.filter(user=case.other).exists()
        assert not Repository.objects.filter(full_name="acme/written").exists()
        RepositoryGrant.objects.create(repository=case.repository, user=case.other, role="viewer")
        RepositoryFactory(full_name="acme/written")

    def test_the_matrix(self, case, action, allowed):
        assert ACTIONS[action](case) is allowed
        for approval in (case.pending, case.own_pending):  # no signal: undone
            assert Approval.objects.get(pk=approval.pk).decision == "pending"


for _role in sorted({role for _, role, _ in matrix()}):
    _name = "TestAs" + "".join(word.capitalize() for word in re.split(r"\W+", _role))
    globals()[_name] = type(_name, (RoleCases,), {"role": _role})
