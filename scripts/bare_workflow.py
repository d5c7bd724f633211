"""The baseline for scripts/bench_orchestration.py: a workflow of four no-op activities.

It lives in its own importable module, free of Django at import time, because Temporal's
workflow sandbox re-imports the workflow's module, which does not work for code defined in a
script's ``__main__``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

WORKFLOW_NAME = "BenchBareWorkflow"
ACTIVITY_NAMES = ("BenchBareCrawl", "BenchBareCases", "BenchBareCode", "BenchBarePullRequest")


class BareActivities:
    """Each activity a no-op in a fresh process of ``pool``, as AMTP's agents run."""

    def __init__(self, pool) -> None:
        self.pool = pool

    def all(self) -> list:
        return [self._activity(name) for name in ACTIVITY_NAMES]

    def _activity(self, name: str):
        # ``str`` of a str is the str: a no-op the child unpickles without importing anything.
        # A function of this module would import temporalio in every child (the agent
        # template does not preload it), ~1 s a task, which AMTP's activities never pay.
        @activity.defn(name=name)
        async def noop(run_id: str) -> str:
            return await asyncio.wrap_future(self.pool.submit(str, run_id))

        return noop


@workflow.defn(name=WORKFLOW_NAME)
class BareWorkflow:
    """Four activities in sequence, nothing else: no bookkeeping, no database, no retries."""

    @workflow.run
    async def run(self, run_id: str) -> str:
        for name in ACTIVITY_NAMES:
            await workflow.execute_activity(
                name, run_id, start_to_close_timeout=timedelta(seconds=120)
            )
        return "passed"
