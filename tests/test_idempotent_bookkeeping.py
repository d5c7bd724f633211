"""Bookkeeping writes only the run's own state and may run any number of times: a retry after
an outage, a lost result or a dead process ends where the first success did."""

import dataclasses

import pytest

from amtp_site.valkey import concurrency_members
from approvals.services import approval_expire, approval_request
from runs import slots, transitions
from runs.models import Run
from runs.temporal import types as t
from runs.temporal.client import retry_settings
from tests.factories import RunFactory
from tests.samples import DEMO_WEB
from tests.temporal_worker import worker_setting
from tests.test_worker_crash import (
    assert_exactly_one_of_everything,
    llm_calls,
    run_past_a_worker_fault,
)
from tests.test_workflow import local_repo


def open_run(**fields) -> Run:
    run = RunFactory(status="running", **fields)
    transitions.create_stages(run)
    return run


def snapshot(run: Run) -> tuple:
    run.refresh_from_db()
    stages = tuple(run.stages.order_by("position").values_list("status", "attempts"))
    return run.status, run.error_type, stages, run.artifacts.count(), run.approvals.count()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "write",
    [
        lambda run: transitions.run_running(str(run.run_id)),
        lambda run: transitions.run_end(run_id=str(run.run_id), status="passed"),
        lambda run: transitions.run_end(run_id=str(run.run_id), status="cancelled"),
        lambda run: transitions.run_end(
            run_id=str(run.run_id),
            status="failed",
            failure=t.Failure(str(run.run_id), "crawl_repo", "GitHubForbidden", "no access"),
        ),
        lambda run: approval_request(
            t.ApprovalRequest(str(run.run_id), "policy", "hold", "create_pull_request")
        ),
    ],
    ids=["running", "passed", "cancelled", "failed", "approval-request"],
)
def test_each_bookkeeping_write_repeated_ends_where_the_first_did(write):
    run = open_run()
    first = write(run), snapshot(run)
    assert (write(run), snapshot(run))[1] == first[1]


@pytest.mark.django_db
def test_a_repeated_approval_request_returns_the_same_approval_and_expiring_it_twice_is_once():
    run = open_run()
    request = t.ApprovalRequest(
        str(run.run_id), "branch-protection", "protected", "create_pull_request"
    )
    approval_id = approval_request(request)
    assert approval_request(request) == approval_id
    approval_expire(approval_id)
    expired = snapshot(run), list(run.approvals.values_list("decision", "decided_at"))
    approval_expire(approval_id)
    assert (snapshot(run), list(run.approvals.values_list("decision", "decided_at"))) == expired


@pytest.mark.django_db
def test_releasing_a_slot_twice_counts_once(valkey):
    runs = [open_run(repository__full_name="acme/web") for _ in range(2)]
    for run in runs:
        slots.slot_acquire(str(run.run_id))
    transitions.run_end(run_id=str(runs[0].run_id), status="cancelled")
    transitions.run_end(run_id=str(runs[0].run_id), status="cancelled")
    # The other run still holds its place, whatever the release was retried.
    assert concurrency_members("acme/web", valkey) == [str(runs[1].run_id)]


@pytest.mark.django_db
def test_a_late_failure_of_a_run_whose_stages_all_passed_leaves_it_passed():
    run = open_run()
    run.stages.update(status="passed")
    failure = t.Failure(str(run.run_id), "create_pull_request", "OperationalError", "refused")
    assert transitions.run_end(run_id=failure.run_id, status="failed", failure=failure) is True
    run.refresh_from_db()
    assert run.status == "passed" and run.error_type == ""
    assert not transitions.run_end(run_id=failure.run_id, status="failed", failure=failure)
    assert set(run.stages.values_list("status", flat=True)) == {"passed"}


@pytest.mark.django_db
@pytest.mark.parametrize("observed", ["deleted", "unknown", None])
def test_a_failure_report_the_contract_refuses_does_not_keep_the_run_running(observed):
    """A StaleBaseBranch whose observed head is not a SHA (a deleted or unreadable base) fails
    the report's contract; that must not roll back the run's end and leave the run running for
    ever (its bookkeeping retries without a cap)."""
    run = open_run()
    details = {"base_branch": "main", "observed_head": observed, "expected_parent": "a" * 40}
    failure = t.Failure(
        str(run.run_id), "create_pull_request", "StaleBaseBranch", "base moved", details
    )
    assert transitions.run_end(run_id=failure.run_id, status="failed", failure=failure) is True
    run.refresh_from_db()
    assert (run.status, run.error_type, run.error_message) == (
        "failed",
        "StaleBaseBranch",
        "base moved",
    )
    assert run.stages.get(name="create_pull_request").status == "failed"
    assert not run.artifacts.filter(kind="failure_report").exists()


def test_bookkeeping_retries_without_a_cap_and_the_agents_keep_the_spec_policy(settings):
    agents, bookkeeping = retry_settings(), retry_settings(bookkeeping=True)
    assert agents.maximum_attempts == 20 and bookkeeping.maximum_attempts == 0
    assert dataclasses.replace(bookkeeping, maximum_attempts=20) == agents


# --- the result of a passed stage lost with its worker ----------------------------------


def test_a_stage_that_passed_in_a_worker_that_then_died_is_reused(
    tmp_path, temporal_env, settings, monkeypatch
):
    """The stage's artifact is stored and the stage passed, then the worker dies (os._exit)
    before Temporal hears the result: the retry, on another worker, finds the stage done and
    reuses its artifact, without asking the model again."""
    worker_setting(settings, monkeypatch, "AMTP_HEARTBEAT_TIMEOUT_S", 5)  # then a retry
    marker = tmp_path / "died"
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    fault = f"fault:{t.GENERATE_TEST_CASES}:exit:{marker}"  # once: the marker holds the pid
    run, logs = run_past_a_worker_fault(tmp_path, settings.TEMPORAL_TASK_QUEUE, repo, fault, marker)
    assert_exactly_one_of_everything(run, repo)
    assert run.stages.get(name="generate_test_cases").attempts == 1  # reused, not run again
    assert llm_calls(logs, "test_case_generator") == 1


def _report(n: int):
    from agents.runner import AgentResult

    return AgentResult(output={"attempt": n}, meta={"provider": "offline", "attempt": n})


@pytest.mark.django_db
def test_an_artifact_stored_twice_keeps_the_first_and_both_keys_name_it():
    """``_persist`` inserts the artifact and its idempotency row in one statement; a later
    attempt (its own key, another answer) gets the first artifact back, unchanged."""
    from runs import pipeline
    from runs.models import ActivityIdempotency, Artifact

    run = open_run()
    kind, schema = "repo_crawler_output", "repo_crawler/output"
    first = pipeline._persist(run, kind, schema, _report(1), "a" * 64, t.CRAWL_REPO)
    second = pipeline._persist(run, kind, schema, _report(2), "b" * 64, t.CRAWL_REPO)
    stored = Artifact.objects.get(run=run, kind=kind)
    assert first.artifact_id == second.artifact_id == stored.artifact_id
    assert stored.content == second.content == {"attempt": 1}
    assert stored.meta == {"provider": "offline", "attempt": 1, "idempotency_key": "a" * 64}
    keys = dict(ActivityIdempotency.objects.filter(run=run).values_list("idem_key", "result"))
    assert keys == {k: {"artifact_id": str(first.artifact_id)} for k in ("a" * 64, "b" * 64)}
    first.save()  # the instance handed back is the stored row: saving it updates, not inserts
    assert Artifact.objects.filter(run=run).count() == 1
    # What a retry finds (pipeline._reuse, raw SQL): the id, and the content as a dict.
    assert pipeline._reuse(run, kind) == (first.artifact_id,)
    assert pipeline._reuse(run, kind, "content") == (first.artifact_id, {"attempt": 1})
    assert pipeline._reuse(run, "test_engineer_output") is None


@pytest.mark.django_db(transaction=True)
def test_attempts_storing_at_once_store_one_artifact():
    """Real concurrent attempts, each on its own connection: one artifact, every key names
    it, every attempt answers with it."""
    import threading

    from django.db import connection

    from runs import pipeline
    from runs.models import ActivityIdempotency, Artifact

    run = open_run()
    kind, schema = "repo_crawler_output", "repo_crawler/output"
    go, answers = threading.Barrier(6), []

    def attempt(n: int) -> None:
        try:
            go.wait()
            stored = pipeline._persist(run, kind, schema, _report(n), f"{n:x}" * 64, "CrawlRepo")
            answers.append(stored.artifact_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = Artifact.objects.get(run=run, kind=kind)
    assert answers == [stored.artifact_id] * 6
    results = ActivityIdempotency.objects.filter(run=run).values_list("result", flat=True)
    assert sorted(r["artifact_id"] for r in results) == [str(stored.artifact_id)] * 6


@pytest.mark.django_db
def test_beginning_a_stage_follows_the_run_and_stage_states():
    """``stage_begin`` (one SQL statement): an open stage of an open run begins again, one
    more attempt, its first start kept and its last error cleared; a stage that passed in an
    open run is reused as it is; anything else is refused and left alone."""
    from runs.models import Stage

    run = open_run()
    stage = Stage.objects.get(run=run, name="crawl_repo")

    def state():
        stage.refresh_from_db()
        return stage.status, stage.attempts, stage.error_type

    assert transitions.stage_begin(str(run.run_id), "crawl_repo") is True
    assert state() == ("running", 1, "")
    first_start = stage.started_at
    transitions.stage_error(str(run.run_id), "crawl_repo", "GitHubRateLimited", "later")
    assert transitions.stage_begin(str(run.run_id), "crawl_repo") is True
    assert state() == ("running", 2, "") and stage.started_at == first_start
    transitions.stage_pass(str(run.run_id), "crawl_repo")
    assert transitions.stage_begin(str(run.run_id), "crawl_repo") is True
    assert state() == ("passed", 2, "")
    Stage.objects.filter(pk=stage.pk).update(status="skipped")
    assert transitions.stage_begin(str(run.run_id), "crawl_repo") is False
    assert state() == ("skipped", 2, "")
    Stage.objects.filter(run=run, name="generate_test_cases").update(status="pending")
    for status in ("cancelled", "failed", "passed"):
        Run.objects.filter(pk=run.pk).update(status=status)
        assert transitions.stage_begin(str(run.run_id), "generate_test_cases") is False
        assert Stage.objects.get(run=run, name="generate_test_cases").attempts == 0
    Stage.objects.filter(pk=stage.pk).update(status="passed")
    assert transitions.stage_begin(str(run.run_id), "crawl_repo") is False  # run finished


@pytest.mark.django_db
def test_an_approval_holds_the_stage_the_workflow_names_and_no_other():
    run = open_run(kind="check")
    request = t.ApprovalRequest(str(run.run_id), "policy", "fork", "verify_tests")
    approval = run.approvals.get(pk=approval_request(request))
    assert approval.stage.name == "verify_tests"
    statuses = dict(run.stages.values_list("name", "status"))
    assert statuses == {"verify_tests": "awaiting_approval", "report_check": "pending"}
    other = open_run(kind="check")  # a check run has no create_pull_request stage to hold
    with pytest.raises(ValueError, match="has no stage 'create_pull_request'"):
        approval_request(t.ApprovalRequest(str(other.run_id), "policy", "x", "create_pull_request"))
    assert not other.approvals.exists()
