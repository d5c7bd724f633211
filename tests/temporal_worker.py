"""A real worker (process pool included) on a fresh task queue, against the Temporal dev server."""

import asyncio
import multiprocessing
import threading
import time
import uuid
from datetime import timedelta

import pytest

from amtp_site.child import connection_env
from runs.models import Run

FAST_RETRY = {
    "initial_interval": timedelta(seconds=0.2),
    "backoff_coefficient": 2.0,
    "maximum_interval": timedelta(seconds=1),
    "maximum_attempts": 4,
}


def child_env() -> dict[str, str]:
    """Spawned agent processes read settings from the environment: point them at the test DB."""
    return {**connection_env(), "AMTP_LLM_PROVIDER": "offline"}


class WorkerThread:
    def __init__(self, task_queue: str, processes: int = 2) -> None:
        self.task_queue = task_queue
        self.processes = processes
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # surfaced by stop()
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        from amtp_site.temporal import connect
        from runs.temporal.worker import RespawningProcessPool, build_worker

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        client = await connect()
        self.pool = RespawningProcessPool(self.processes)
        with multiprocessing.Manager() as manager:
            worker = build_worker(
                client, task_queue=self.task_queue, pool=self.pool, manager=manager
            )
            async with worker:
                self._ready.set()
                await self._stop.wait()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def start(self) -> "WorkerThread":
        self.thread.start()
        self._ready.wait(60)
        if self.error:
            raise self.error
        return self

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(60)


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
    thread = WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE).start()
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
