"""What Temporal and the operator see when an activity fails in an agent process.

Temporal keeps a retried activity's last failure only up to a few KB (beyond, its UI shows
"Failure exceeds size limit" instead of the error): a failure keeps its type, a bounded message
and bounded details, and the traceback goes to the worker's log. An agent process template
that cannot preload a module says which one, on every task, instead of starting processes
cold without a word.
"""

import pytest
from temporalio import activity
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError

from amtp_site.errors import ConfigurationError
from runs.services import run_create
from runs.temporal import types as t
from runs.temporal import worker
from runs.temporal.failures import MESSAGE_LIMIT, activity_failure
from runs.temporal.worker import RespawningProcessPool
from runs.temporal.worker_thread import WorkerThread
from schemas.errors import SchemaValidationError
from tests.agent_process_probe import fail_loudly, one_task
from tests.factories import RepositoryFactory
from tests.stub_stages import _name, stub_activities
from tests.temporal_worker import child_env, wait_terminal

pytestmark = pytest.mark.django_db(transaction=True)
# The server's default limit for the failure it keeps of a retried activity.
TEMPORAL_FAILURE_LIMIT = 4 * 1024


@pytest.fixture
def child_settings(monkeypatch):
    for key, value in child_env().items():
        monkeypatch.setenv(key, value)


def as_temporal_sees_it(raised: BaseException) -> Failure:
    """``raised`` through activity_failure, raised and caught as an activity's would be, then
    encoded as the worker sends it to Temporal."""
    try:
        raise activity_failure(raised) from None
    except Exception as error:
        failure = Failure()
        converter = DataConverter.default
        converter.failure_converter.to_failure(error, converter.payload_converter, failure)
        return failure


def test_an_agent_process_error_reaches_temporal_typed_bounded_and_without_its_traceback(
    child_settings, caplog
):
    pool = RespawningProcessPool(1)
    try:
        raised = pool.submit(fail_loudly, 200_000).exception(60)
    finally:
        pool.shutdown()
    assert type(raised) is RuntimeError and raised.__cause__ is None
    assert "in deeper" in caplog.text and "fail_loudly" in caplog.text  # the log has it
    failure = as_temporal_sees_it(raised)
    assert failure.application_failure_info.type == "RuntimeError"
    assert not failure.application_failure_info.non_retryable
    assert failure.message.startswith("the agent broke: xxx")
    assert len(failure.message) <= MESSAGE_LIMIT and "200017 characters" in failure.message
    assert not failure.HasField("cause")
    assert failure.ByteSize() < TEMPORAL_FAILURE_LIMIT


def test_an_amtp_error_keeps_its_retryability_and_bounded_details():
    violations = [{"path": f"/cases/{i}", "message": "m" * 200, "rule": "type"} for i in range(500)]
    failure = as_temporal_sees_it(SchemaValidationError("test_engineer/output", violations))
    info = failure.application_failure_info
    assert (info.type, info.non_retryable) == ("SchemaValidationError", True)
    assert failure.message.startswith("test_engineer/output: 500 violation(s): /cases/0: mmm")
    assert failure.ByteSize() < TEMPORAL_FAILURE_LIMIT
    small = as_temporal_sees_it(ConfigurationError("set AMTP_X"))
    assert (small.message, small.application_failure_info.non_retryable) == ("set AMTP_X", True)


@pytest.mark.parametrize(
    "template,says",
    [
        (
            "tests.broken_agent_template",
            "preload module tests.no_such_module_for_the_template failed to import",
        ),
        ("tests.no_such_template", "the agent process template tests.no_such_template could"),
    ],
)
def test_a_template_that_cannot_preload_fails_every_task_naming_the_module(
    child_settings, monkeypatch, caplog, template, says
):
    monkeypatch.setattr(worker, "TEMPLATE", template)
    worker._stop_template()  # the next fork starts a forkserver that preloads ``template``
    pool = RespawningProcessPool(1)
    try:
        for _ in range(2):
            with pytest.raises(ConfigurationError, match=says):
                pool.submit(one_task, "never runs").result(60)
    finally:
        pool.shutdown()
        worker._stop_template()  # the next test's pool starts one with the real template
    assert says in caplog.text  # the worker's log says it too


def crawl_raising(*details):
    @activity.defn(name=t.CRAWL_REPO)
    async def crawl(run_id: str) -> str:
        raise ApplicationError("the crawl broke without a type", *details, non_retryable=True)

    return crawl


@pytest.mark.parametrize("details", [(), ("details that are not a mapping",)])
def test_a_typeless_application_error_fails_the_run_naming_it(temporal_env, details):
    """An activity (a stand-in, or third-party code) raising an ApplicationError without a
    type: the run ends failed, its error the class's name and the message, not an EndRun
    retried forever on a failure it cannot decode."""
    repo = RepositoryFactory(full_name="acme/typeless")
    others = [a for a in stub_activities() if _name(a) != t.CRAWL_REPO]
    with WorkerThread(
        temporal_env.TEMPORAL_TASK_QUEUE,
        processes=1,
        activities=[crawl_raising(*details), *others],
    ):
        run = wait_terminal(run_create(repository=repo), 30)
    assert (run.status, run.error_type) == ("failed", "ApplicationError")
    assert run.error_message == "the crawl broke without a type"
    crawl = run.stages.get(name="crawl_repo")
    assert (crawl.status, crawl.error_type) == ("failed", "ApplicationError")
    report = run.artifacts.get(kind="failure_report").content
    assert (report["error"], report["stage"]) == ("ApplicationError", "crawl_repo")
