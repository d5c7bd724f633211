"""The agent process pool: every task in a process that never ran another one, forked from a
template that has already imported the agent stack (runs/temporal/agent_template.py)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from runs.temporal.worker import RespawningProcessPool
from tests.agent_process_probe import one_task
from tests.temporal_worker import child_env

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def child_settings(monkeypatch):
    for key, value in child_env().items():
        monkeypatch.setenv(key, value)


def test_every_task_gets_a_fresh_forked_process_with_nothing_carried_over(child_settings, capfd):
    pool = RespawningProcessPool(2)
    try:
        tasks = [pool.submit(one_task, f"task {i}").result(60) for i in range(6)]
    finally:
        pool.shutdown()
    assert len({t["pid"] for t in tasks}) == 6  # one process per task
    assert all(t["mark_found"] is None for t in tasks)  # no state from an earlier task
    assert not any(t["connection_inherited"] for t in tasks)
    assert all(t["query"] == 1 for t in tasks)
    assert all(t["preloaded"] for t in tasks)  # imported once, in the template
    assert all(t["validators_compiled"] for t in tasks)  # and its read-only caches filled
    # Forked by the template (the forkserver), not started by the worker itself.
    assert {t["parent"] for t in tasks} != {os.getpid()}
    assert len({t["parent"] for t in tasks}) == 1
    # They write where the worker writes now, not where the template's stderr was.
    err = capfd.readouterr().err
    assert all(f"agent process says task {i}" in err for i in range(6)), err


def test_a_changed_environment_reaches_the_next_agent_process(child_settings, monkeypatch):
    """Settings come from the environment: a task after a change sees it, even though the
    template (and a process forked ahead) started with the old one."""
    pool = RespawningProcessPool(1)
    try:
        before = pool.submit(one_task, "before").result(60)
        monkeypatch.setenv("AMTP_PROBE_SETTING", "changed")
        after = pool.submit(one_task, "after").result(60)
    finally:
        pool.shutdown()
    assert before["setting"] is None and after["setting"] == "changed"
    assert before["parent"] != after["parent"]  # a new template


def test_no_process_the_worker_starts_holds_its_open_descriptors(temporal_env):
    """A pytest-xdist worker that crashed once hung the whole suite: a process forked from it
    (the heartbeat manager) still held execnet's pipe, so the controller never saw it close.
    Every helper process the worker starts (the manager, the agent template and its agent
    processes) starts without the worker's descriptors."""
    import psutil

    from runs.temporal.worker_thread import WorkerThread

    read, write = os.pipe()
    os.set_inheritable(write, True)  # as a test runner's own pipe is
    pipe = f"pipe:[{os.fstat(write).st_ino}]"
    try:
        with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1) as worker:
            worker.pool.submit(os.getpid).result(60)  # the agent template is running too
            children = psutil.Process().children(recursive=True)
            holders = [c.cmdline()[:3] for c in children if pipe in _descriptors(c.pid)]
            assert len(children) >= 2, [c.cmdline()[:3] for c in children]
    finally:
        os.close(read)
        os.close(write)
    assert holders == []


def _descriptors(pid: int) -> set[str]:
    try:
        return {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return set()


def test_a_stopped_worker_leaves_no_database_connection_open(tmp_path, temporal_env):
    """The worker's threads keep their connections between activities, and close them when
    it stops: a test database can then be dropped, a deploy's old worker leaves nothing."""
    import time

    from django.db import connection

    from runs.services import run_create
    from runs.temporal.worker_thread import WorkerThread
    from tests.samples import DEMO_WEB
    from tests.temporal_worker import wait_terminal
    from tests.test_workflow import local_repo

    def others() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0]

    before = others()
    repo = local_repo(tmp_path, "web", DEMO_WEB)
    with WorkerThread(temporal_env.TEMPORAL_TASK_QUEUE, processes=1):
        run = wait_terminal(run_create(repository=repo, depth_level="smoke"))
        during = others()
    assert run.status == "passed", (run.error_type, run.error_message)
    assert during > before  # kept while the worker ran
    deadline = time.monotonic() + 10  # a backend ends a moment after its client hangs up
    while others() > before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert others() == before


def test_the_workflow_module_is_compiled_once_not_per_workflow(monkeypatch):
    """The sandbox imports the workflow's module afresh for every workflow; the worker writes
    its bytecode first, so that even with bytecode writing off (PYTHONDONTWRITEBYTECODE)
    the import loads it instead of compiling the source every time."""
    from runs.temporal import workflow
    from runs.temporal.worker import compile_workflow_modules

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cached = Path(importlib.util.cache_from_source(workflow.__file__))
    package = Path(importlib.util.cache_from_source(sys.modules["runs.temporal"].__file__))
    for pyc in (cached, package):
        pyc.unlink(missing_ok=True)
    compile_workflow_modules([workflow.TestGenerationWorkflow])
    assert cached.is_file() and package.is_file()
    loader = importlib.util.spec_from_file_location("probe", workflow.__file__).loader
    compiled = []
    monkeypatch.setattr(loader, "source_to_code", lambda *a, **k: compiled.append(a))
    assert loader.get_code("probe") is not None and compiled == []  # read, not compiled
