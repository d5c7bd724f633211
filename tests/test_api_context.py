"""GET /api/runs/{id}/context: the run as a multi-agent context document, checked here with
its own draft-07 schema (format checking on), independently of the API's validation."""

import pytest
from django.utils import timezone
from jsonschema import Draft7Validator

import schemas
from approvals.models import Approval
from runs.context import SCHEMA
from runs.models import Artifact, Run
from runs.transitions import create_stages
from schemas.errors import SchemaValidationError
from tests import api_support
from tests.factories import ApprovalFactory, ArtifactFactory, RunFactory

pytestmark = pytest.mark.django_db

client, make_token = api_support.client, api_support.make_token


# --- context document --------------------------------------------------------------------------


def spec_validator():
    schema = schemas.load("context/workflow_context")
    return Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)


def test_context_of_a_fresh_run(client):
    run = RunFactory()
    create_stages(run)
    document = client.get(f"/api/runs/{run.run_id}/context").json()
    spec_validator().validate(document)
    assert document["workflow_id"] == str(run.run_id) and document["version"] == "1.0"
    assert (document["current_agent"], document["next_agent"], document["phase"]) == (
        "repo-crawler",
        "app-booter",
        "crawl_repo",
    )
    assert "run stage crawl_repo (repo-crawler)" in document["pending_actions"]
    assert any("e2e/amtp/" in c for c in document["constraints"])


def test_context_of_a_held_run_and_of_a_passed_run(client):
    run = RunFactory(status="running", repository__require_approval=True)
    create_stages(run)
    held = run.stages.filter(name="create_pull_request")
    run.stages.exclude(name="create_pull_request").update(
        status="passed", started_at=timezone.now()
    )
    held.update(status="awaiting_approval", started_at=timezone.now())
    code = ArtifactFactory(
        run=run,
        kind="test_engineer_output",
        content={"files": [{"path": "e2e/amtp/login.spec.ts", "contents": "x"}]},
    )
    approval = ApprovalFactory(run=run, stage=held.get(), approver="policy")
    document = client.get(f"/api/runs/{run.run_id}/context").json()
    spec_validator().validate(document)
    assert (document["current_agent"], document["next_agent"], document["phase"]) == (
        "create-pull-request",
        None,
        "create_pull_request",
    )
    assert str(approval.approval_id) in document["pending_actions"][0]
    assert document["files_modified"] == ["e2e/amtp/login.spec.ts"]
    assert document["checkpoints"][0]["id"] == str(code.artifact_id)
    Approval.objects.filter(pk=approval.pk).update(
        decision="approved", decided_by="alice", decided_at=timezone.now()
    )
    Run.objects.filter(pk=run.pk).update(status="passed", pr_url="https://x.test/pr/1")
    run.stages.update(status="passed")
    document = client.get(f"/api/runs/{run.run_id}/context").json()
    spec_validator().validate(document)
    assert (document["phase"], document["next_agent"]) == ("complete", None)
    assert any("approved by alice" in d for d in document["decisions"])
    assert document["pending_actions"] == ["review and merge pull request https://x.test/pr/1"]


def test_context_of_a_failed_run_logs_the_errors(client):
    run = RunFactory(status="failed", error_type="SchemaValidationError", error_message="x" * 5000)
    create_stages(run)
    run.stages.filter(position=0).update(
        status="failed",
        started_at=timezone.now(),
        error_type="SchemaValidationError",
        error_message="bad",
    )
    document = client.get(f"/api/runs/{run.run_id}/context").json()
    spec_validator().validate(document)
    assert document["phase"] == "failed" and document["error_log"][0]["agent"] == "repo-crawler"
    assert len(document["context_summary"]) <= 500
    assert Artifact.objects.count() == 0


def test_the_schema_is_spec_004s_draft_07_and_its_own_examples_pass():
    schema = schemas.load(SCHEMA)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    for example in schema["examples"]:
        assert schemas.validate(SCHEMA, example) == example
    with pytest.raises(SchemaValidationError, match="date-time"):
        schemas.validate(SCHEMA, {**schema["examples"][0], "timestamp": "yesterday"})
