"""The CHECK and unique constraints hold in PostgreSQL itself, even through raw SQL."""

import uuid

import pytest
from django.db import IntegrityError, connection, transaction

from tests.factories import ApprovalFactory, ArtifactFactory, RunFactory, StageFactory

pytestmark = pytest.mark.django_db


def raw(sql, params):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def insert_run(repo_id, **overrides):
    values = {
        "status": "pending",
        "trigger": "api",
        "depth_level": "smoke",
        "target_framework": "playwright",
    }
    values.update(overrides)
    raw(
        "INSERT INTO runs (run_id, repository_id, repo_full_name, ref, commit_sha, base_sha, base_branch,"
        " depth_level, target_framework, status, trigger, requested_by, head_branch, pr_url,"
        " error_type, error_message, created_at)"
        " VALUES (%s, %s, 'acme/web', 'main', '', '', 'main', %s, %s, %s, %s, '', '', '', '', '', now())",
        [
            uuid.uuid4(),
            repo_id,
            values["depth_level"],
            values["target_framework"],
            values["status"],
            values["trigger"],
        ],
    )


def test_raw_sql_run_with_valid_values_is_accepted():
    run = RunFactory()
    insert_run(run.repository_id)


@pytest.mark.parametrize(
    "field,value",
    [
        ("status", "done"),
        ("status", "PASSED"),
        ("trigger", "cron"),
        ("depth_level", "shallow"),
        ("target_framework", "cypress"),
    ],
)
def test_raw_sql_run_with_bad_value_is_refused(field, value):
    run = RunFactory()
    with pytest.raises(IntegrityError, match="runs_.*_valid"):
        insert_run(run.repository_id, **{field: value})


def test_raw_sql_bad_stage_status_and_name_are_refused():
    stage = StageFactory()
    for sql, constraint in [
        ("UPDATE stages SET status = 'waiting' WHERE stage_id = %s", "stages_status_valid"),
        ("UPDATE stages SET name = 'deploy' WHERE stage_id = %s", "stages_name_valid"),
    ]:
        with pytest.raises(IntegrityError, match=constraint):
            raw(sql, [stage.stage_id])


def test_stage_awaiting_approval_is_a_valid_status():
    stage = StageFactory()
    raw("UPDATE stages SET status = 'awaiting_approval' WHERE stage_id = %s", [stage.stage_id])


def test_raw_sql_bad_artifact_kind_and_approval_decision_are_refused():
    artifact = ArtifactFactory()
    with pytest.raises(IntegrityError, match="artifacts_kind_valid"):
        raw("UPDATE artifacts SET kind = 'notes' WHERE artifact_id = %s", [artifact.artifact_id])
    approval = ApprovalFactory()
    with pytest.raises(IntegrityError, match="approvals_decision_valid"):
        raw(
            "UPDATE approvals SET decision = 'maybe', decided_at = now() WHERE approval_id = %s",
            [approval.approval_id],
        )


def test_one_stage_per_run_and_name():
    stage = StageFactory()
    with pytest.raises(IntegrityError, match="stages_one_per_run_and_name"), transaction.atomic():
        StageFactory(run=stage.run, name=stage.name)
    StageFactory(run=stage.run, name="generate_test_cases")


def test_one_artifact_per_run_and_kind():
    artifact = ArtifactFactory()
    with (
        pytest.raises(IntegrityError, match="artifacts_one_per_run_and_kind"),
        transaction.atomic(),
    ):
        ArtifactFactory(run=artifact.run, kind=artifact.kind)


def test_one_pending_approval_per_run_and_decided_needs_a_time():
    approval = ApprovalFactory()
    with pytest.raises(IntegrityError, match="approvals_one_pending_per_run"), transaction.atomic():
        ApprovalFactory(run=approval.run, stage=approval.stage)
    with pytest.raises(IntegrityError, match="approvals_decided_has_time"):
        raw(
            "UPDATE approvals SET decision = 'approved' WHERE approval_id = %s",
            [approval.approval_id],
        )


def test_repository_constraints():
    with pytest.raises(IntegrityError, match="repositories_local_needs_path"), transaction.atomic():
        RunFactory(repository__full_name="acme/local", repository__host="local")
    with pytest.raises(IntegrityError, match="repositories_full_name_valid"), transaction.atomic():
        RunFactory(repository__full_name="no-slash")


def test_idempotency_key_must_be_sha256_hex():
    run = RunFactory()
    with pytest.raises(IntegrityError, match="activity_idempotency_key_hex"):
        raw(
            "INSERT INTO activity_idempotency (idem_key, run_id, activity_name, result, created_at)"
            " VALUES ('not-a-hash', %s, 'CrawlRepo', '{}', now())",
            [run.run_id],
        )


def test_runs_carries_only_the_indexes_its_lists_and_keys_use():
    # Each index costs a write per insert and its size; scripts/bench_lists.py prints each
    # one's scans at a million runs, tests/test_lists.py that the planner uses the page ones.
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'runs'")
        names = {row[0] for row in cursor.fetchall()}
    assert names == {
        "runs_pkey",
        "runs_request_key_unique",
        "runs_newest_page",
        "runs_status_page",
        "runs_repository_page",
        "runs_repo_full_name_page",
        "runs_trigger_page",
        "runs_repo_full_name_prefix",
        "runs_ref_prefix",
        "runs_requested_by_prefix",
    }
