"""Fixtures and helpers of the API tests: tokens, clients, problem assertions, Temporal.

Runs are started on the real Temporal dev server on a task queue of the test's own with no
worker (the workflow exists and waits); ``api_env`` terminates them afterwards.
Test modules bind the fixtures they use at module level (``api_env = api_support.api_env``).
"""

import json
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission, User
from django.test import Client
from temporalio.service import RPCError

from access import auth
from amtp_site.problems import PROBLEM_TYPES
from amtp_site.temporal import connect
from runs.models import Run
from tests.factories import RepositoryFactory

ALL_SCOPES = ["runs:read", "runs:write", "approvals:decide"]
PROBLEM = "application/problem+json"


async def _workflows(run_ids, action):
    client = await connect()
    results = {}
    for run_id in run_ids:
        handle = client.get_workflow_handle(run_id)
        try:
            results[run_id] = await action(handle)
        except RPCError:
            results[run_id] = None
    return results


def describe(run_id):
    return async_to_sync(_workflows)([str(run_id)], lambda h: h.describe())[str(run_id)]


def signals_of(run_id):
    async def signals(handle):
        return [
            e.workflow_execution_signaled_event_attributes.signal_name
            async for e in handle.fetch_history_events()
            if e.HasField("workflow_execution_signaled_event_attributes")
        ]

    return async_to_sync(_workflows)([str(run_id)], signals)[str(run_id)]


@pytest.fixture
def api_env(settings, valkey):
    """A task queue of this test's own and a clean Valkey database; workflows cleaned up."""
    settings.TEMPORAL_TASK_QUEUE = f"test-api-{uuid.uuid4()}"
    yield settings
    run_ids = [str(pk) for pk in Run.objects.values_list("run_id", flat=True)]
    async_to_sync(_workflows)(run_ids, lambda h: h.terminate("test finished"))


def token_owner():
    """Whose the tests' tokens are unless they say: a superuser, so a token reaches every
    repository with exactly its scopes (a token without a user must name repositories)."""
    user = User.objects.filter(username="token-owner").first()
    return user or User.objects.create_superuser("token-owner", password=None)


@pytest.fixture
def make_token():
    def make(*scopes, **kwargs):
        scopes = list(scopes) or ALL_SCOPES
        if "user" not in kwargs and not kwargs.get("repositories"):
            kwargs["user"] = token_owner()
        return auth.api_token_create(name="test", scopes=scopes, actor=None, **kwargs)[1]

    return make


def bearer(secret):
    return Client(headers={"Authorization": f"Bearer {secret}"})


@pytest.fixture
def client(make_token):
    return bearer(make_token())


@pytest.fixture
def repo():
    return RepositoryFactory(
        full_name="acme/shop",
        default_branch="trunk",
        default_depth_level="core",
        default_framework="maestro",
    )


def post(client, path, body, **headers):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(
        path, data, content_type=headers.pop("content_type", "application/json"), headers=headers
    )


def assert_problem(response, status, slug=None):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert {"type", "title", "status", "detail", "instance", "errors"} <= set(body)
    assert body["status"] == status and body["instance"].startswith("/api/")
    if slug:
        assert body["type"] == "/api/problems/" + slug
    assert body["type"].removeprefix("/api/problems/") in PROBLEM_TYPES, body["type"]
    return body


@pytest.fixture
def staff():
    """An operator: staff with the permissions to read, start and cancel runs (no more)."""
    user = User.objects.create_user("ops", password="pw", is_staff=True)
    for codename in ("view_run", "add_run", "change_run"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return User.objects.get(pk=user.pk)
