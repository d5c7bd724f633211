"""Each rule has one home (a service) and every surface refuses the same things with the same
words: approval decisions through the admin and the API, request keys through the API, the
launch form and webhooks, the run window through the API's 429 and the workflow's failure."""

import re

import pytest
from django.urls import reverse

from amtp_site.valkey import window_key
from approvals import admin as approvals_admin
from approvals.errors import ApprovalDecisionInvalid
from approvals.services import (
    BAD_DECISION,
    COMMENT_TOO_LONG,
    MAX_COMMENT_CHARS,
    REJECT_NEEDS_COMMENT,
    approval_decide,
)
from runs.errors import IdempotencyKeyReused
from runs.models import Run
from runs.services import IDEMPOTENCY_KEY_REUSED, run_create
from runs.slots import RATE_LIMITED
from runs.temporal.dispatcher import run_starts_dispatch
from tests import api_support
from tests.admin_helpers import VIEW, change_url, client_for, csrf_post, flashed, staff
from tests.api_support import assert_problem, bearer, post, signals_of
from tests.factories import ApprovalFactory, RepositoryFactory
from tests.temporal_worker import wait_terminal

pytestmark = pytest.mark.django_db

api_env, make_token, client, repo = (
    api_support.api_env,
    api_support.make_token,
    api_support.client,
    api_support.repo,
)


# --- approval decisions: admin and API ----------------------------------------------------


@pytest.fixture
def held(api_env):
    """Make a run whose workflow is started (no worker) with a pending approval on it."""

    def make():
        run = run_create(repository=RepositoryFactory())
        run_starts_dispatch()  # what a worker's dispatcher does
        return ApprovalFactory(run=run, stage=run.stages.get(name="create_pull_request"))

    return make


def admin_decide(approval, **data) -> list[str]:
    client = client_for(staff(*VIEW, "approvals.decide_approval"), csrf=True)
    decide = reverse("admin:approvals_approval_decide", args=[approval.pk])
    response = csrf_post(client, change_url(approval), decide, data)
    assert response.status_code == 302
    return flashed(response)


def api_decide(client, approval, **body):
    return post(client, f"/api/approvals/{approval.approval_id}/decision", body)


def still_pending(approval) -> bool:
    approval.refresh_from_db()
    decided = (approval.decision, approval.decided_by, approval.decided_at)
    return decided == ("pending", "", None) and signals_of(approval.run_id) == []


def refused_by_the_api(response, detail: str) -> None:
    problem = assert_problem(response, 422, "validation-error")
    assert problem["detail"] == detail
    assert [e["field"] for e in problem["errors"]] == ["comment"]


@pytest.mark.parametrize("comment", ["", "  \n "])
def test_a_reject_without_a_comment_is_refused_by_admin_and_api_alike(client, held, comment):
    approval = held()
    flashes = admin_decide(approval, decision="rejected", comment=comment)
    assert flashes == [approvals_admin.INVALID_DECISION.format(errors=REJECT_NEEDS_COMMENT)]
    refused_by_the_api(
        api_decide(client, approval, decision="rejected", comment=comment), REJECT_NEEDS_COMMENT
    )
    assert still_pending(approval)


def test_the_comment_limit_is_the_same_for_admin_and_api(client, held):
    approval = held()
    too_long = "x" * (MAX_COMMENT_CHARS + 1)
    refusal = COMMENT_TOO_LONG.format(length=MAX_COMMENT_CHARS + 1, limit=MAX_COMMENT_CHARS)
    flashes = admin_decide(approval, decision="approved", comment=too_long)
    assert flashes == [approvals_admin.INVALID_DECISION.format(errors=refusal)]
    refused_by_the_api(api_decide(client, approval, decision="approved", comment=too_long), refusal)
    assert still_pending(approval)

    at_limit = "y" * MAX_COMMENT_CHARS
    by_admin, by_api = held(), held()
    assert "rejected by" in admin_decide(by_admin, decision="rejected", comment=at_limit)[0]
    assert api_decide(client, by_api, decision="rejected", comment=at_limit).status_code == 200
    for approval in (by_admin, by_api):
        approval.refresh_from_db()
        assert (approval.decision, approval.decision_comment) == ("rejected", at_limit)


def test_the_api_documents_the_services_comment_limit(client):
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["DecisionIn"]
    assert schema["properties"]["comment"]["maxLength"] == MAX_COMMENT_CHARS


def test_an_unknown_decision_is_a_typed_refusal_naming_the_field(held):
    approval = held()
    with pytest.raises(ApprovalDecisionInvalid) as caught:
        approval_decide(approval=approval, decision="maybe", decided_by="bob", comment="hm")
    assert caught.value.field == "decision"
    assert caught.value.message == BAD_DECISION.format(decision="maybe")
    assert still_pending(approval)


# --- request keys: run_create is the one home ---------------------------------------------


def test_an_idempotency_key_reused_with_other_inputs_is_422_and_creates_nothing(
    client, repo, api_env
):
    RepositoryFactory(full_name="acme/other")
    body = {"repo_full_name": "acme/shop", "ref": "main"}
    first = post(client, "/api/runs", body, Idempotency_Key="k-1")
    assert first.status_code == 201
    run_id = first.json()["run_id"]
    for other in (
        {**body, "ref": "dev"},
        {**body, "depth_level": "deep"},
        {**body, "base_branch": "release"},
        {"repo_full_name": "acme/other"},
    ):
        response = post(client, "/api/runs", other, Idempotency_Key="k-1")
        problem = assert_problem(response, 422, "idempotency-key-reused")
        assert problem["detail"] == IDEMPOTENCY_KEY_REUSED.format(key="k-1", run_id=run_id)
        error = problem["errors"][0]
        assert (error["field"], error["location"]) == ("Idempotency-Key", "header")
    assert Run.objects.count() == 1
    # Omitted fields take the repository's defaults, so asking for less is the same request.
    again = post(client, "/api/runs", {"repo_full_name": "acme/shop"}, Idempotency_Key="k-1")
    assert again.status_code == 200 and again.json()["run_id"] == run_id


def test_a_replay_is_answered_even_when_the_window_is_full(client, api_env, valkey):
    """The API's 429 guards new runs only: a retry of one already created is not one more."""
    RepositoryFactory(full_name="acme/busy", rate_limit_runs=1, rate_limit_window_seconds=600)
    body = {"repo_full_name": "acme/busy"}
    first = post(client, "/api/runs", body, Idempotency_Key="k-2")
    valkey.zadd(window_key("acme/busy"), {"another-run": int(valkey.time()[0])})
    again = post(client, "/api/runs", body, Idempotency_Key="k-2")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["run_id"] == first.json()["run_id"]
    assert_problem(post(client, "/api/runs", body, Idempotency_Key="k-3"), 429, "rate-limited")
    assert Run.objects.count() == 1


def test_every_surface_gets_the_same_refusal_from_run_create(api_env):
    """The launch form and webhooks pass their own request keys to the same service."""
    repository = RepositoryFactory(full_name="acme/shop")
    run = run_create(repository=repository, ref="main", request_key="s-1", request_scope="form")
    assert run.created and run.request_key == "form:s-1"
    again = run_create(repository=repository, request_key="s-1", request_scope="form")
    assert again.pk == run.pk and not again.created
    with pytest.raises(IdempotencyKeyReused) as caught:
        run_create(repository=repository, ref="dev", request_key="s-1", request_scope="form")
    assert caught.value.message == IDEMPOTENCY_KEY_REUSED.format(key="s-1", run_id=run.pk)
    other_scope = run_create(repository=repository, request_key="s-1", request_scope="cli")
    assert other_scope.created and Run.objects.count() == 2


# --- the run window: the API's 429 and the workflow's failure -----------------------------


@pytest.mark.django_db(transaction=True)
def test_the_api_429_and_the_workflows_rate_limit_failure_say_the_same(worker, make_token, valkey):
    repository = RepositoryFactory(
        full_name="acme/busy", rate_limit_runs=2, rate_limit_window_seconds=600
    )
    now = int(valkey.time()[0])
    valkey.zadd(window_key("acme/busy"), {"run-a": now, "run-b": now - 1})
    response = post(bearer(make_token()), "/api/runs", {"repo_full_name": "acme/busy"})
    problem = assert_problem(response, 429, "rate-limited")
    run = wait_terminal(run_create(repository=repository))  # no peek: the workflow is refused
    assert (run.status, run.error_type) == ("failed", "RateLimitExceeded")
    said = RATE_LIMITED.format(
        repo="acme/busy", count=2, window=600, limit=2, retry_after="RETRY_AFTER"
    )
    pattern = re.escape(said).replace("RETRY_AFTER", r"\d+")
    assert re.fullmatch(pattern, problem["detail"]), problem["detail"]
    assert re.fullmatch(pattern, run.error_message), run.error_message
