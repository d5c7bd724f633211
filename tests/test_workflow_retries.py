"""The activity retry policy as configured, and what it does to a run on the real worker:
a malformed answer is retried by Temporal, a schema violation ends the run after one attempt,
a PR lock held by another run is waited for with backoff."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from amtp_site import valkey as valkey_mod
from runs.services import run_create
from runs.temporal import types as t
from runs.temporal.worker_thread import WorkerThread
from tests.faults import BadAnswer, FaultOnce
from tests.histories import run_history
from tests.samples import DEMO_WEB
from tests.temporal_worker import wait_for, wait_terminal
from tests.test_workflow import local_repo

ROOT = Path(__file__).resolve().parent.parent
SHOW_DEFAULTS = """
import json
from django.conf import settings
from runs.temporal.client import retry_settings
from runs.temporal.run_steps import _retry_policy
from runs.management.commands.run_worker import Command
policy = _retry_policy(retry_settings())
parser = Command().create_parser("manage.py", "run_worker")
print(json.dumps({
    "initial_s": policy.initial_interval.total_seconds(),
    "coefficient": policy.backoff_coefficient,
    "maximum_s": policy.maximum_interval.total_seconds(),
    "attempts": policy.maximum_attempts,
    "non_retryable": policy.non_retryable_error_types,
    "queue": settings.TEMPORAL_TASK_QUEUE,
    "worker_queue": parser.parse_args([]).task_queue,
}))
"""


def test_the_spec_retry_policy_and_task_queue_are_the_defaults():
    """With nothing set in the environment, the policy the workflow hands Temporal is spec
    003's (2 s, x2, 30 s, 20 attempts) and the worker serves ``amtp-activities``."""
    overrides = ("AMTP_RETRY_", "TEMPORAL_TASK_QUEUE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(overrides)}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SHOW_DEFAULTS],
        cwd=ROOT,
        env={**env, "DJANGO_DEBUG": "true"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout.strip().splitlines()[-1])
    assert (shown["initial_s"], shown["coefficient"], shown["maximum_s"]) == (2.0, 2.0, 30.0)
    assert shown["attempts"] == 20
    assert shown["queue"] == shown["worker_queue"] == "amtp-activities"
    assert "SchemaValidationError" in shown["non_retryable"]
    assert "MalformedLlmOutput" not in shown["non_retryable"]
    assert "RepoPrLockContended" not in shown["non_retryable"]


def _type(failure) -> str:
    """The error type of a failure; Temporal wraps one too large to keep whole ("Failure
    exceeds size limit.") around what it kept of it."""
    while failure is not None and failure.ByteSize():
        if failure.application_failure_info.type:
            return failure.application_failure_info.type
        failure = failure.cause if failure.HasField("cause") else None
    return ""


def attempts_of(run_id: str, activity: str) -> list[tuple[int, str, str]]:
    """From the workflow's history: (attempt, failure type before it, how it ended) of each
    execution of ``activity``. Temporal writes ActivityTaskStarted once, for the last attempt,
    with the previous attempt's failure."""
    names, started, out = {}, {}, []
    for e in run_history(run_id).events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            names[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
        elif e.HasField("activity_task_started_event_attributes"):
            a = e.activity_task_started_event_attributes
            started[a.scheduled_event_id] = (a.attempt, a.last_failure)
        elif e.HasField("activity_task_completed_event_attributes"):
            done = e.activity_task_completed_event_attributes.scheduled_event_id
            out.append((done, "completed"))
        elif e.HasField("activity_task_failed_event_attributes"):
            a = e.activity_task_failed_event_attributes
            out.append((a.scheduled_event_id, _type(a.failure)))
    return [(started[s][0], _type(started[s][1]), end) for s, end in out if names[s] == activity]


@pytest.mark.django_db(transaction=True)
def test_a_malformed_answer_and_a_held_pr_lock_are_retried_then_the_run_passes(
    tmp_path, temporal_env
):
    """One run, two retryable faults: the Test Case Generator's first answer is prose
    (MalformedLlmOutput), and another run holds the repository's PR lock when this one
    reaches CreatePullRequest (RepoPrLockContended, shown on the stage while it waits)."""
    temporal_env.AMTP_RETRY_POLICY = {**temporal_env.AMTP_RETRY_POLICY, "maximum_attempts": 20}
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    lock = valkey_mod.pr_lock_key(repo.full_name)
    valkey_mod.client().set(lock, str(uuid.uuid4()), px=120_000)  # another run's
    prose = BadAnswer(t.GENERATE_TEST_CASES, "Sure! Here are the test cases you asked for.")
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=2, interceptors=[FaultOnce(prose)]):
        run = run_create(repository=repo, depth_level="smoke")
        pr_stage = lambda r: r.stages.get(name="create_pull_request")  # noqa: E731
        wait_for(run, lambda r: pr_stage(r).error_type == "RepoPrLockContended", 90)
        assert "is opening a pull request on acme/web" in pr_stage(run).error_message
        valkey_mod.client().delete(lock)  # the other run is done
        run = wait_terminal(run, 90)
    assert run.status == "passed", (run.error_type, run.error_message)
    cases = run.stages.get(name="generate_test_cases")
    assert (cases.attempts, cases.error_type) == (2, "")
    [(attempt, before, end)] = attempts_of(str(run.pk), t.GENERATE_TEST_CASES)
    assert (attempt, before, end) == (2, "MalformedLlmOutput", "completed")
    [(attempt, before, end)] = attempts_of(str(run.pk), t.CREATE_PULL_REQUEST)
    assert attempt >= 2 and (before, end) == ("RepoPrLockContended", "completed")
    assert pr_stage(run).attempts == attempt and run.pr_number == 1


@pytest.mark.django_db(transaction=True)
def test_a_schema_violation_ends_the_run_after_one_attempt(tmp_path, temporal_env):
    """Non-retryable: one attempt (its repair turn included), the run failed naming the
    violated rule, the later stages skipped."""
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    answer = '{"entry_points": "src/server.js", "detected_stack": ["node"]}'
    off_contract = BadAnswer(t.CRAWL_REPO, answer, attempts=(1, 2, 3, 4))
    queue = temporal_env.TEMPORAL_TASK_QUEUE
    with WorkerThread(queue, processes=2, interceptors=[FaultOnce(off_contract)]):
        run = wait_terminal(run_create(repository=repo, depth_level="smoke"), 90)
    assert (run.status, run.error_type) == ("failed", "SchemaValidationError")
    assert "$.entry_points" in run.error_message
    crawl = run.stages.get(name="crawl_repo")
    assert (crawl.status, crawl.attempts, crawl.error_type) == (
        "failed",
        1,
        "SchemaValidationError",
    )
    assert attempts_of(str(run.pk), t.CRAWL_REPO) == [(1, "", "SchemaValidationError")]
    later = run.stages.filter(position__gt=crawl.position).values_list("status", flat=True)
    assert set(later) == {"skipped"}
