"""The baseline for scripts/bench_orchestration.py: a workflow of four no-op activities.

It lives in its own importable module, free of Django at import time, because the spawned pool
processes unpickle the activities by module name and Temporal's workflow sandbox re-imports the
workflow's module; neither works for code defined in a script's ``__main__``.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

WORKFLOW_NAME = "BenchBareWorkflow"
ACTIVITY_NAMES = ("BenchBareCrawl", "BenchBareCases", "BenchBareCode", "BenchBarePullRequest")


@activity.defn(name=ACTIVITY_NAMES[0])
def bare_crawl(run_id: str) -> str:
    return run_id


@activity.defn(name=ACTIVITY_NAMES[1])
def bare_cases(run_id: str) -> str:
    return run_id


@activity.defn(name=ACTIVITY_NAMES[2])
def bare_code(run_id: str) -> str:
    return run_id


@activity.defn(name=ACTIVITY_NAMES[3])
def bare_pull_request(run_id: str) -> str:
    return run_id


ACTIVITIES = [bare_crawl, bare_cases, bare_code, bare_pull_request]


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
