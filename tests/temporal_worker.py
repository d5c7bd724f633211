"""A real worker (process pool included) on a fresh task queue, against the Temporal dev server."""

import time
import uuid
from datetime import timedelta

import pytest

from amtp_site.child import connection_env
from runs.models import Run
from runs.temporal.worker_thread import WorkerThread

FAST_RETRY = {
    "initial_interval": timedelta(seconds=0.2),
    "backoff_coefficient": 2.0,
    "maximum_interval": timedelta(seconds=1),
    "maximum_attempts": 4,
}


def child_env() -> dict[str, str]:
    """Spawned agent processes read settings from the environment: point them at the test DB."""
    return {**connection_env(), "AMTP_LLM_PROVIDER": "offline"}


def worker_setting(settings, monkeypatch, name: str, value) -> None:
    """``name`` for this process and for the worker processes a test starts: they read the
    environment, and a workflow's timeouts are those of the worker whose dispatcher starts it."""
    setattr(settings, name, value)
    monkeypatch.setenv(name, str(value))


@pytest.fixture
def temporal_env(settings, valkey, monkeypatch, transactional_db):
    settings.TEMPORAL_TASK_QUEUE = f"test-{uuid.uuid4()}"
    settings.AMTP_RETRY_POLICY = {**settings.AMTP_RETRY_POLICY, **FAST_RETRY}
    settings.AMTP_AGENT_ACTIVITY_TIMEOUT_S = 120
    settings.AMTP_BOOKKEEPING_TIMEOUT_S = 30
    settings.AMTP_LLM_PROVIDER = "offline"
    for key, value in child_env().items():
        monkeypatch.setenv(key, value)
    return settings


@pytest.fixture
def worker(temporal_env):
    thread = WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=2).start()
    yield thread
    thread.stop()


def wait_for(run: Run, predicate, timeout: float = 120) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if predicate(run):
            return run
        time.sleep(0.25)
    stages = {s.name: (s.status, s.error_type, s.error_message[:200]) for s in run.stages.all()}
    raise AssertionError(
        f"timed out: run {run.status} {run.error_type} {run.error_message} {stages}"
    )


def wait_terminal(run: Run, timeout: float = 120) -> Run:
    return wait_for(run, lambda r: r.is_terminal, timeout)
