"""Stand-ins for the stage activities, registered under their real names (the conventions'
way to test a workflow): the real workflow and bookkeeping activities run around them, so a
test of slots, limits or cancellation runs in seconds without agents or hosts. Like the real
ones, they heartbeat, which is how a cancel request reaches them."""

import asyncio
import time

from asgiref.sync import sync_to_async
from django.db import connections
from temporalio import activity
from temporalio.activity import _Definition

from runs import transitions
from runs.temporal import types as t
from runs.temporal.worker import ACTIVITIES


def _in_thread(fn, *args):
    try:
        return fn(*args)
    finally:
        connections.close_all()


def _stub(name: str, seconds: float):
    stage_name = t.STAGE_OF[name]

    async def stage(run_id: str):
        await sync_to_async(_in_thread, thread_sensitive=False)(
            transitions.stage_begin, run_id, stage_name
        )
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            activity.heartbeat()
            await asyncio.sleep(0.1)
        await sync_to_async(_in_thread, thread_sensitive=False)(
            transitions.stage_pass, run_id, stage_name
        )
        if name == t.CRAWL_REPO:  # BootApp and ExploreApp run, as they do without a target
            return t.RepoMap(f"stub-{name}", exploration_skipped=False, boot_skipped=False)
        if name == t.GENERATE_TEST_CODE:  # VerifyTests runs, as it does with a target URL
            return t.TestCode(f"stub-{name}", verification_skipped=False)
        return f"stub-{name}"

    stage.__name__ = stage.__qualname__ = name
    return activity.defn(name=name)(stage)


def stub_activities(seconds: float = 0.0, slow: str | None = None) -> list:
    """Every stage a stub that takes no time, or ``seconds`` for the stage named ``slow``
    (every stage if None); every other activity the real one (bookkeeping, approvals)."""
    stubs = [_stub(name, seconds if slow in (None, stage) else 0.0) for name, stage in t.STAGES]
    others = [a for a in ACTIVITIES if _name(a) not in t.STAGE_OF]
    return [*stubs, *others]


def _name(fn) -> str:
    return _Definition.must_from_callable(fn).name
