"""Property-based fuzzing of /api from its own OpenAPI document (schemathesis over WSGI).

Every operation gets schema-conforming and schema-violating requests, authenticated with an
all-scopes token, half of them aimed at a real run and approval (a started workflow); no
answer may be a 5xx, every answer must be documented (status, media type, body schema) and
every error must be a problem document. Bounded and deterministic: a fixed number of
examples per operation, derandomized.
"""

import pytest
import schemathesis
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
from runs.services import run_create
from tests import api_support
from tests.factories import ApprovalFactory, ArtifactFactory, RepositoryFactory

api_env, make_token = api_support.api_env, api_support.make_token  # shared fixtures

EXAMPLES_PER_OPERATION = 25
PROBLEM = "application/problem+json"
PARAMETERLESS = {"POST /api/webhooks/github"}
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
    return {"run_id": str(run.run_id), "approval_id": str(approval.approval_id)}


@pytest.mark.django_db(transaction=True)  # each WSGI request ends by closing old connections
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_operation_answers_with_a_server_error(make_token, seeded, mode):
    headers = {"Authorization": f"Bearer {make_token()}"}
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 9
    for operation in operations:
        pinned = {p.name: seeded[p.name] for p in operation.path_parameters if p.name in seeded}
        cases = st.one_of(
            operation.as_strategy(generation_mode=mode),
            operation.as_strategy(generation_mode=mode, path_parameters=pinned),
        )

        @given(case=cases)
        @hypothesis_settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            response = case.call_and_validate(headers=headers, checks=CHECKS)
            if response.status_code >= 400:
                assert response.headers["content-type"] == [PROBLEM], (case, response.text)
                assert response.json()["status"] == response.status_code

        try:
            check()
        except Unsatisfiable:  # an operation without parameters has nothing to violate
            assert mode == GenerationMode.NEGATIVE and operation.label in PARAMETERLESS
