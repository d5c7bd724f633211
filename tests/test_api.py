"""The API at /api: authentication outcomes, starting, reading and cancelling runs,
hostile input, routing errors. Every error is an RFC 9457 problem and changes nothing."""

import json
import re
import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from temporalio.client import WorkflowExecutionStatus

from access import auth
from access.models import ApiToken
from amtp_site import api as site_api
from amtp_site.valkey import window_key
from runs import api as runs_api
from runs.models import Run, RunStart
from runs.services import RUN_FINISHED
from runs.temporal.dispatcher import run_starts_dispatch
from tests import api_support
from tests.api_support import assert_problem, bearer, describe, post
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory

pytestmark = pytest.mark.django_db

api_env, make_token, client, repo, staff = (
    api_support.api_env,
    api_support.make_token,
    api_support.client,
    api_support.repo,
    api_support.staff,
)


# --- authentication ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
def test_no_credentials_is_401_with_a_bearer_challenge(method):
    response = getattr(Client(), method)("/api/runs")
    body = assert_problem(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert body["detail"] == auth.UNAUTHENTICATED


def test_token_is_stored_hashed_shown_once_and_records_its_use(make_token):
    secret = make_token("runs:read")
    token = ApiToken.objects.get()
    assert secret.startswith("amtp_") and len(secret) > 40
    assert token.token_hash == auth.hash_secret(secret) and secret not in token.token_hash
    assert token.key_prefix == secret[:12] and token.last_used_at is None
    assert bearer(secret).get("/api/runs").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_token_is_checked_with_one_query_that_brings_its_owner(
    make_token, django_assert_num_queries
):
    user = User.objects.create(username="ci")
    secret = make_token("runs:read", user=user)
    auth.api_token_authenticate(secret)  # the first use is recorded (then once a minute)
    with django_assert_num_queries(1):
        principal = auth.Principal.for_token(auth.api_token_authenticate(secret))
    assert principal.name == f"ci (API token {secret[:12]}…)"
    assert principal.scopes == {"runs:read"} and principal.via == "token"
    with django_assert_num_queries(0):  # the owner came with the token: rights, audit entries
        assert principal.user == user and principal.actor.user.pk == user.pk
        assert principal.owner.is_active and not principal.owner.is_superuser


@pytest.mark.parametrize("how", ["unknown", "revoked", "expired", "not bearer", "inactive user"])
def test_bad_tokens_are_401(make_token, how):
    user = User.objects.create(username="ci", is_active=how != "inactive user")
    expires = timezone.now() - timedelta(seconds=1) if how == "expired" else None
    secret = make_token("runs:read", user=user, expires_at=expires)
    if how == "revoked":
        auth.api_token_revoke(token=ApiToken.objects.get(), actor=None)
    headers = {"Authorization": f"Bearer {secret}"}
    if how == "unknown":
        headers = {"Authorization": "Bearer amtp_" + "x" * 43}
    if how == "not bearer":
        headers = {"Authorization": f"Token {secret}"}
    assert_problem(Client(headers=headers).get("/api/runs"), 401, "unauthenticated")


def test_a_token_works_until_it_expires(make_token):
    user = User.objects.create(username="ci")
    secret = make_token("runs:read", user=user, expires_at=timezone.now() + timedelta(hours=1))
    assert Client(headers={"Authorization": f"Bearer {secret}"}).get("/api/runs").status_code == 200


def test_missing_scope_is_403_and_changes_nothing(make_token, repo):
    client = bearer(make_token("runs:read"))
    response = post(client, "/api/runs", {"repo_full_name": "acme/shop"})
    body = assert_problem(response, 403, "forbidden")
    assert body["detail"] == auth.MISSING_SCOPE.format(scope="runs:write")
    assert Run.objects.count() == 0


def test_unknown_scopes_are_refused_at_creation():
    with pytest.raises(ValueError, match="unknown scope"):
        auth.api_token_create(name="x", scopes=["runs:delete"], actor=None)
    with pytest.raises(ValueError, match=auth.NO_SCOPES):
        auth.api_token_create(name="x", scopes=[], actor=None)


def test_staff_session_reads_and_non_staff_session_is_401(staff):
    session = Client()
    session.force_login(staff)
    assert session.get("/api/runs").status_code == 200
    session.force_login(User.objects.create_user("visitor"))
    assert_problem(session.get("/api/runs"), 401)


def test_staff_session_without_csrf_token_is_403_and_with_it_201(staff, repo, api_env):
    session = Client(enforce_csrf_checks=True)
    session.force_login(staff)
    body = assert_problem(post(session, "/api/runs", {"repo_full_name": "acme/shop"}), 403)
    assert body["detail"] == auth.CSRF_FAILED and Run.objects.count() == 0
    token = "a" * 32  # a CSRF secret: the cookie and the header must agree
    session.cookies["csrftoken"] = token
    response = post(session, "/api/runs", {"repo_full_name": "acme/shop"}, X_CSRFToken=token)
    assert response.status_code == 201, response.content
    assert response.json()["requested_by"] == "ops"


# --- POST /api/runs -------------------------------------------------------------------------


def test_create_run_defaults_from_the_repository_and_queues_its_start(client, repo, api_env):
    response = post(client, "/api/runs", {"repo_full_name": "acme/shop"})
    assert response.status_code == 201, response.content
    body = response.json()
    run = Run.objects.get()
    assert response["Location"] == f"/api/runs/{run.run_id}" == body["url"]
    assert (body["ref"], body["base_branch"], body["depth_level"], body["target_framework"]) == (
        "trunk",
        "trunk",
        "core",
        "maestro",
    )
    assert body["trigger"] == "api" and body["status"] == "pending"
    assert "API token amtp_" in body["requested_by"]
    assert [s["name"] for s in body["stages"]] == [
        "crawl_repo",
        "boot_app",
        "explore_app",
        "generate_test_cases",
        "generate_test_code",
        "verify_tests",
        "create_pull_request",
    ]
    assert describe(run.run_id) is None  # not during the request: from the outbox
    assert run_starts_dispatch() == 1 and not RunStart.objects.exists()  # what a worker does
    description = describe(run.run_id)
    assert description.status == WorkflowExecutionStatus.RUNNING
    assert description.task_queue == api_env.TEMPORAL_TASK_QUEUE


def test_create_answers_what_a_read_shows_without_reading_it_back(
    client, repo, api_env, django_assert_num_queries
):
    """The 201 of a new run is built from what the request inserted (bench_submit.py): the
    token, the repository, then one statement (run, stages, window admission), no read back;
    and it is what GET shows of the same run right after (no worker polls its queue)."""
    repo.rate_limit_runs = 5
    repo.save()
    post(client, "/api/runs", {"repo_full_name": "acme/shop"})  # the token's last use: written
    # SELECT token, SELECT repo, one INSERT; the SAVEPOINT and its RELEASE around the INSERT
    # are there only inside a transaction (the test's: a request runs in autocommit)
    with django_assert_num_queries(5):
        created = post(client, "/api/runs", {"repo_full_name": "acme/shop"})
    assert created.status_code == 201, created.content
    shown = client.get(created["Location"]).json()
    assert created.json() == shown
    assert shown["artifacts"] == shown["approvals"] == [] and shown["verification"] is None


def test_create_run_with_every_field(client, repo, api_env):
    body = {
        "repo_full_name": "acme/shop",
        "ref": "feature/x",
        "depth_level": "deep",
        "target_framework": "playwright",
        "base_branch": "release",
    }
    created = post(client, "/api/runs", body).json()
    assert {k: created[k] for k in body} == body


def test_a_maintenance_run_is_asked_for_by_its_kind(client, repo, api_env):
    # Without a preview URL nor a target_url, it would have nothing to re-verify against.
    asked = {"repo_full_name": "acme/shop", "kind": "maintenance"}
    body = assert_problem(post(client, "/api/runs", asked), 422)
    assert body["errors"][0]["field"] == "target_url"
    assert body["detail"].startswith("target_url: acme/shop has no preview URL: a maintenance")
    assert Run.objects.count() == 0
    created = post(client, "/api/runs", asked | {"target_url": "https://preview.example.com"})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["kind"] == Run.objects.get().kind == "maintenance"
    assert [s["name"] for s in body["stages"]] == ["verify_tests", "create_pull_request"]
    listed = client.get("/api/runs").json()["items"]
    assert [item["kind"] for item in listed] == ["maintenance"]


def test_idempotency_key_replays_the_same_run(client, repo, api_env):
    body = {"repo_full_name": "acme/shop", "ref": "main"}
    first = post(client, "/api/runs", body, Idempotency_Key="deploy-42")
    again = post(client, "/api/runs", body, Idempotency_Key="deploy-42")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json() and again["Location"] == first["Location"]
    assert Run.objects.count() == 1
    other = post(client, "/api/runs", {**body, "ref": "dev"}, Idempotency_Key="deploy-42")
    assert_problem(other, 422, "idempotency-key-reused")
    fresh = post(client, "/api/runs", body, Idempotency_Key="deploy-43")
    assert fresh.status_code == 201 and Run.objects.count() == 2


def test_idempotency_keys_belong_to_their_caller(make_token, repo, api_env):
    body = {"repo_full_name": "acme/shop"}
    a = post(bearer(make_token()), "/api/runs", body, Idempotency_Key="k1").json()
    b = post(bearer(make_token()), "/api/runs", body, Idempotency_Key="k1").json()
    assert a["run_id"] != b["run_id"]


def fill_window(valkey, repo_name, count):
    now = int(valkey.time()[0])
    valkey.zadd(window_key(repo_name), {f"run-{i}": now - i for i in range(count)})


def test_exhausted_rate_limit_is_429_with_retry_after_and_takes_no_slot(client, api_env, valkey):
    RepositoryFactory(full_name="acme/busy", rate_limit_runs=3, rate_limit_window_seconds=600)
    fill_window(valkey, "acme/busy", 3)
    response = post(client, "/api/runs", {"repo_full_name": "acme/busy"})
    body = assert_problem(response, 429, "rate-limited")
    assert 590 <= int(response["Retry-After"]) <= 600 and body["retry_after"] > 0
    assert Run.objects.count() == 0 and valkey.zcard(window_key("acme/busy")) == 3


def test_rate_limit_with_room_left_creates_the_run(client, api_env, valkey):
    RepositoryFactory(full_name="acme/busy", rate_limit_runs=3)
    fill_window(valkey, "acme/busy", 2)
    response = post(client, "/api/runs", {"repo_full_name": "acme/busy"})
    assert response.status_code == 201
    # The API takes the run's place in the window as it creates the run (R6: atomic).
    assert valkey.zcard(window_key("acme/busy")) == 3
    assert valkey.zscore(window_key("acme/busy"), response.json()["run_id"]) is not None


def test_a_run_is_accepted_while_temporal_is_unreachable(client, repo, api_env):
    """The run goes into the run_starts outbox with its row: Temporal is not asked during the
    request (a worker's dispatcher starts it: test_run_starts.py), so it cannot refuse it."""
    address, api_env.TEMPORAL_ADDRESS = api_env.TEMPORAL_ADDRESS, "127.0.0.1:1"
    response = post(client, "/api/runs", {"repo_full_name": "acme/shop"}, Idempotency_Key="r1")
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.status == "pending" and RunStart.objects.filter(run=run).exists()
    again = post(client, "/api/runs", {"repo_full_name": "acme/shop"}, Idempotency_Key="r1")
    api_env.TEMPORAL_ADDRESS = address
    assert again.status_code == 200 and again.json()["run_id"] == str(run.run_id)
    assert RunStart.objects.count() == 1 and describe(run.run_id) is None


def test_a_503_shows_no_internals_and_logs_them_under_its_error_id(client, repo, api_env, caplog):
    running = RunFactory(repository=repo, status="running")  # cancelling it asks Temporal
    address, api_env.TEMPORAL_ADDRESS = api_env.TEMPORAL_ADDRESS, "127.0.0.1:1"
    body = assert_problem(post(client, f"/api/runs/{running.run_id}/cancel", {}), 503)
    api_env.TEMPORAL_ADDRESS = address
    assert body["detail"] == site_api.ORCHESTRATOR_DOWN
    assert "127.0.0.1" not in json.dumps(body) and "Temporal at" not in json.dumps(body)
    assert re.fullmatch(r"[0-9a-f]{12}", body["error_id"])
    logged = [r.getMessage() for r in caplog.records if body["error_id"] in r.getMessage()]
    assert len(logged) == 1 and "127.0.0.1:1" in logged[0]


def test_unregistered_repository_names_the_field(client):
    body = assert_problem(post(client, "/api/runs", {"repo_full_name": "acme/nope"}), 422)
    assert body["errors"][0]["field"] == "repo_full_name"
    assert body["detail"] == runs_api.REPO_NOT_REGISTERED.format(name="acme/nope")


HOSTILE = [
    ("wrong type", {"repo_full_name": "acme/shop", "ref": 7}, 422, "ref"),
    ("extra field", {"repo_full_name": "acme/shop", "priority": "high"}, 422, "priority"),
    ("huge string", {"repo_full_name": "acme/shop", "ref": "a" * 100_000}, 422, "ref"),
    ("bad enum", {"repo_full_name": "acme/shop", "depth_level": "galactic"}, 422, "depth_level"),
    ("check kind", {"repo_full_name": "acme/shop", "kind": "check"}, 422, "kind"),  # webhooks'
    ("missing field", {"ref": "main"}, 422, "repo_full_name"),
    ("null byte", {"repo_full_name": "acme/shop", "ref": "ma\x00in"}, 422, "ref"),
    ("bad ref", {"repo_full_name": "acme/shop", "base_branch": "a..b"}, 422, "base_branch"),
    ("not an object", [1, 2], 422, "body"),
    ("invalid JSON", '{"repo_full_name": ', 400, None),
    ("empty body", "", 422, "body"),
]


@pytest.mark.parametrize("label,body,status,field", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_run_bodies_are_problems_and_change_nothing(
    client, repo, label, body, status, field
):
    before = (Run.objects.count(), ApiToken.objects.count())
    problem = assert_problem(post(client, "/api/runs", body), status)
    if field:
        assert field in {e["field"] for e in problem["errors"]}, problem
    assert (Run.objects.count(), ApiToken.objects.count()) == before


def test_wrong_content_type_is_415(client, repo):
    response = post(
        client,
        "/api/runs",
        "repo_full_name=acme/shop",
        content_type="application/x-www-form-urlencoded",
    )
    body = assert_problem(response, 415, "unsupported-media-type")
    assert "application/x-www-form-urlencoded" in body["detail"] and Run.objects.count() == 0


def test_oversized_body_is_413(client, repo, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {"repo_full_name": "acme/shop", "ref": "x" * 2000}
    assert_problem(post(client, "/api/runs", body), 413, "payload-too-large")
    assert Run.objects.count() == 0


def test_bad_idempotency_key_is_422_naming_the_header(client, repo):
    response = post(
        client, "/api/runs", {"repo_full_name": "acme/shop"}, Idempotency_Key="with space"
    )
    body = assert_problem(response, 422)
    assert body["errors"][0]["location"] == "header" and Run.objects.count() == 0


# --- reading runs ----------------------------------------------------------------------------


def test_list_runs_is_paginated_and_filtered(client):
    old = RunFactory(status="passed", target_framework="maestro", trigger="webhook")
    Run.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    runs = [RunFactory(status="running") for _ in range(3)]
    page = client.get("/api/runs", {"limit": 2}).json()
    assert page["count"] == 4 and len(page["items"]) == 2
    assert page["items"][0]["run_id"] == str(runs[-1].run_id)  # newest first
    assert client.get("/api/runs", {"limit": 2, "offset": 2}).json()["items"][1]["run_id"] == str(
        old.run_id
    )

    def ids(**filters):
        return {item["run_id"] for item in client.get("/api/runs", filters).json()["items"]}

    assert (
        ids(status="passed")
        == ids(framework="maestro")
        == ids(trigger="webhook")
        == {str(old.run_id)}
    )
    assert ids(repository=runs[0].repo_full_name) == {str(runs[0].run_id)}
    day_ago = (timezone.now() - timedelta(days=1)).isoformat()
    assert ids(created_before=day_ago) == {str(old.run_id)}
    assert len(ids(created_after=day_ago)) == 3


@pytest.mark.parametrize(
    "query",
    [
        {"status": "done"},
        {"limit": 0},
        {"limit": 10_000},
        {"offset": -1},
        {"created_after": "yesterday"},
    ],
)
def test_bad_list_filters_are_422_naming_the_parameter(client, query):
    body = assert_problem(client.get("/api/runs", query), 422, "validation-error")
    assert (
        body["errors"][0]["field"] == next(iter(query)) and body["errors"][0]["location"] == "query"
    )


def test_run_detail_has_stages_artifacts_approvals_and_pr(client):
    run = RunFactory(
        status="passed", pr_number=7, pr_url="https://github.test/acme/pr/7", head_branch="amtp/x"
    )
    artifact = ArtifactFactory(run=run, content={"hello": "wörld"})
    approval = ApprovalFactory(run=run)
    body = client.get(f"/api/runs/{run.run_id}").json()
    assert body["pull_request"] == {
        "number": 7,
        "url": "https://github.test/acme/pr/7",
        "head_branch": "amtp/x",
    }
    summary = body["artifacts"][0]
    assert summary["artifact_id"] == str(artifact.artifact_id) and "content" not in summary
    assert summary["size"] == len(json.dumps({"hello": "wörld"}, ensure_ascii=False).encode())
    assert body["approvals"][0]["approval_id"] == str(approval.approval_id)
    assert body["approvals"][0]["stage"] == "create_pull_request"


def test_artifact_content_and_meta(client):
    artifact = ArtifactFactory(content={"a": [1, 2]}, meta={"sanitizer": "v1.0.0"})
    response = client.get(f"/api/runs/{artifact.run_id}/artifacts/repo_crawler_output")
    body = response.json()
    assert body["content"] == {"a": [1, 2]} and body["meta"] == {"sanitizer": "v1.0.0"}
    assert body["kind"] == "repo_crawler_output"
    missing = client.get(f"/api/runs/{artifact.run_id}/artifacts/pull_request")
    assert_problem(missing, 404, "not-found")
    assert_problem(client.get(f"/api/runs/{artifact.run_id}/artifacts/secrets"), 422)


@pytest.mark.parametrize(
    "path", ["/api/runs/{}", "/api/runs/{}/context", "/api/runs/{}/artifacts/pull_request"]
)
def test_unknown_run_is_404_and_a_bad_uuid_is_422(client, path):
    assert_problem(client.get(path.format(uuid.uuid4())), 404, "not-found")
    body = assert_problem(client.get(path.format("not-a-uuid")), 422)
    assert body["errors"][0]["field"] == "run_id" and body["errors"][0]["location"] == "path"


def test_unknown_path_and_wrong_method_are_problems(client):
    assert_problem(client.get("/api/nothing/here"), 404, "not-found")
    assert_problem(client.get("/api/"), 404, "not-found")
    assert_problem(client.post("/api/nothing"), 404, "not-found")
    response = client.delete("/api/runs")
    assert_problem(response, 405, "method-not-allowed")
    assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "POST"}


def test_a_crash_is_a_500_problem_without_internals(client, monkeypatch, caplog):
    run = RunFactory()

    def explode(run):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(runs_api, "run_context", explode)
    body = assert_problem(client.get(f"/api/runs/{run.run_id}/context"), 500, "internal-error")
    assert body["detail"] == site_api.INTERNAL_ERROR and "secret" not in json.dumps(body)
    [logged] = [r for r in caplog.records if body["error_id"] in r.getMessage()]
    assert "secret internals" in logged.getMessage() and logged.exc_info


def test_openapi_document_and_docs_are_served():
    document = Client().get("/api/openapi.json").json()
    assert {"/api/runs", "/api/runs/{run_id}/context", "/api/webhooks/github"} <= set(
        document["paths"]
    )
    assert Client().get("/api/docs").status_code == 200


# --- cancel ----------------------------------------------------------------------------------


def test_cancel_a_started_run_and_cancelling_a_finished_one_is_409(client, repo, api_env):
    run_id = post(client, "/api/runs", {"repo_full_name": "acme/shop"}).json()["run_id"]
    assert run_starts_dispatch() == 1  # started, as a worker's dispatcher does
    response = client.post(f"/api/runs/{run_id}/cancel")
    assert response.status_code == 202, response.content
    assert describe(run_id).status in (
        WorkflowExecutionStatus.RUNNING,
        WorkflowExecutionStatus.CANCELED,
    )
    done = RunFactory(status="passed")
    body = assert_problem(client.post(f"/api/runs/{done.run_id}/cancel"), 409, "run-conflict")
    assert body["detail"] == RUN_FINISHED.format(run_id=done.run_id, status="passed")


def test_cancel_a_run_not_started_yet_cancels_it_in_place(client, repo, api_env):
    run_id = post(client, "/api/runs", {"repo_full_name": "acme/shop"}).json()["run_id"]
    response = client.post(f"/api/runs/{run_id}/cancel")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "cancelled" and not RunStart.objects.exists()
    assert run_starts_dispatch() == 0 and describe(run_id) is None  # never started


def test_cancel_needs_the_write_scope(make_token):
    run = RunFactory()
    assert_problem(bearer(make_token("runs:read")).post(f"/api/runs/{run.run_id}/cancel"), 403)
    assert Run.objects.get().status == "pending"


def test_a_target_urls_query_string_is_never_shown(client, repo):
    url = "https://preview.acme.test/app?token=s3cr3t-preview-token"
    RunFactory(repository=repo, target_url=url)
    listed = client.get("/api/runs").json()
    shown = json.dumps(listed)
    assert "https://preview.acme.test/app" in shown and "s3cr3t-preview-token" not in shown
