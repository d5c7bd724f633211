"""The agent process pool: every task in a process that never ran another one, forked from a
template that has already imported the agent stack (runs/temporal/agent_template.py)."""

import os

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
