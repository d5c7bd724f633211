"""Property-based fuzzing of /api from its own OpenAPI document (schemathesis over WSGI), in
three modes of credentials:

- all scopes: schema-conforming and schema-violating requests, half of them aimed at a real run
  and approval (a started workflow); no answer may be a 5xx, every answer must be documented
  (status, media type, body schema) and every error must be a problem document;
- no credentials: every operation answers 401 with a Bearer challenge, except the documented
  public endpoints (the GitHub webhook, which authenticates deliveries by signature);
- a read-only token: every write answers 403, every read gets past authorization;
- a viewer, an operator and an approver of one repository (a token of theirs with every
  scope): reads pass, no write the role lacks succeeds, and a run of another repository is
  404 on every operation that names it, and so is another repository.

Bounded and deterministic: a fixed number of examples per operation, derandomized. The first
mode generates 10 per operation in `make test`; `scripts/fuzz_api.sh` runs this file with more
(AMTP_FUZZ_EXAMPLES, 100 unless set).
"""

import os

import pytest
import schemathesis
from django.contrib.auth.models import User
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from amtp_site.wsgi import application
from repositories.models import RepositoryGrant
from runs.services import run_create
from runs.temporal.dispatcher import run_starts_dispatch
from tests import api_support
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory, RunFactory

api_env, make_token = api_support.api_env, api_support.make_token  # shared fixtures

# Every operation in every mode; scripts/fuzz_api.sh raises it for a longer search.
EXAMPLES_PER_OPERATION = int(os.environ.get("AMTP_FUZZ_EXAMPLES", "10"))
EXAMPLES_PER_AUTH_CHECK = 5  # authorization comes before validation: a few examples say it all
PROBLEM = "application/problem+json"
PARAMETERLESS = {"POST /api/webhooks/github"}
PUBLIC = {"POST /api/webhooks/github"}  # documented: authenticated by the delivery's signature
# No 5xx, and every answer is documented: its status, media type and body schema.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture
def seeded(api_env):
    """Something to find: a repository, a started run with an artifact and a pending approval."""
    api_env.GITHUB_WEBHOOK_SECRET = "fuzzing"  # without one, the receiver answers 503 by design
    run = run_create(repository=RepositoryFactory(full_name="acme/shop"))
    ArtifactFactory(run=run)
    approval = ApprovalFactory(run=run, stage=run.stages.get(name="create_pull_request"))
    return {
        "run_id": str(run.run_id),
        "approval_id": str(approval.approval_id),
        "owner": "acme",
        "name": "shop",
    }


def operations():
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    found = [result.ok() for result in schema.get_all_operations()]
    assert len(found) == 11
    return found


def fuzz(operation, seeded, mode, examples, headers, check_response) -> None:
    """Call ``operation`` with ``examples`` generated cases (half aimed at the seeded run and
    approval) and hand each response to ``check_response(case, response)``."""
    pinned = {p.name: seeded[p.name] for p in operation.path_parameters if p.name in seeded}
    cases = st.one_of(
        operation.as_strategy(generation_mode=mode),
        operation.as_strategy(generation_mode=mode, path_parameters=pinned),
    )

    @given(case=cases)
    @hypothesis_settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def check(case):
        check_response(case, case.call_and_validate(headers=headers, checks=CHECKS))

    try:
        check()
    except Unsatisfiable:  # an operation without parameters has nothing to violate
        assert mode == GenerationMode.NEGATIVE and operation.label in PARAMETERLESS


def is_problem(case, response) -> None:
    if response.status_code >= 400:
        assert response.headers["content-type"] == [PROBLEM], (case, response.text)
        assert response.json()["status"] == response.status_code


@pytest.mark.django_db(transaction=True)  # each WSGI request ends by closing old connections
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_operation_answers_with_a_server_error(make_token, seeded, mode):
    headers = {"Authorization": f"Bearer {make_token()}"}
    for operation in operations():
        fuzz(operation, seeded, mode, EXAMPLES_PER_OPERATION, headers, is_problem)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_without_credentials_everything_but_the_public_endpoints_is_401(seeded, mode):
    for operation in operations():

        def check(case, response, public=operation.label in PUBLIC):
            is_problem(case, response)
            if not public:
                assert response.status_code == 401, (case, response.text)
                assert response.headers["www-authenticate"] == ['Bearer realm="amtp"']

        fuzz(operation, seeded, mode, EXAMPLES_PER_AUTH_CHECK, {}, check)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_a_read_only_token_is_403_on_every_write(make_token, seeded, mode):
    headers = {"Authorization": f"Bearer {make_token('runs:read')}"}
    for operation in operations():
        write = operation.method.upper() != "GET"

        def check(case, response, write=write, public=operation.label in PUBLIC):
            is_problem(case, response)
            if public:
                return
            if write:
                assert response.status_code == 403, (case, response.text)
            else:
                assert response.status_code not in (401, 403), (case, response.text)

        fuzz(operation, seeded, mode, EXAMPLES_PER_AUTH_CHECK, headers, check)


# What each role may write, by operation: everything else must not succeed.
ROLE_WRITES = {
    "viewer": set(),
    "operator": {"POST /api/runs", "POST /api/runs/{run_id}/cancel"},
    "approver": {"POST /api/approvals/{approval_id}/decision"},
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", sorted(ROLE_WRITES))
def test_a_role_on_one_repository_gets_its_rights_there_and_nothing_elsewhere(
    make_token, seeded, role
):
    user = User.objects.create_user(f"{role}-of-shop", is_staff=True)
    shop = RepositoryFactory(full_name="acme/shop")
    RepositoryGrant.objects.create(repository=shop, user=user, role=role)
    elsewhere = RunFactory(repository=RepositoryFactory(full_name="acme/other"))
    run_starts_dispatch()  # the seeded run's workflow waits: an approval signals it
    headers = {"Authorization": f"Bearer {make_token(user=user)}"}
    for operation in operations():
        write = operation.method.upper() != "GET"
        allowed = operation.label in ROLE_WRITES[role]

        def check(case, response, write=write, allowed=allowed, public=operation.label in PUBLIC):
            is_problem(case, response)
            if public:
                return
            assert response.status_code != 401, (case, response.text)
            if write and not allowed:
                assert response.status_code >= 400, (case, response.text)
            if not write:
                assert response.status_code != 403, (case, response.text)

        fuzz(operation, seeded, GenerationMode.POSITIVE, EXAMPLES_PER_AUTH_CHECK, headers, check)
        if {"run_id", "name"} & {p.name for p in operation.path_parameters}:
            hidden = {**seeded, "run_id": str(elsewhere.run_id), "name": "other"}

            # A write the role lacks meets its gate (403) first; anything else is 404.
            expected = (403, 404) if write and not allowed else (404,)

            def not_found(case, response, expected=expected):
                is_problem(case, response)
                assert response.status_code in expected, (case, response.text)

            fuzz(operation, hidden, GenerationMode.POSITIVE, 2, headers, not_found)
