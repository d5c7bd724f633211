"""Stand-ins for the stage activities, registered under their real names (the conventions'
way to test a workflow): the real workflow and bookkeeping activities run around them, so a
test of slots, limits or cancellation runs in seconds without agents or hosts."""

import functools
import time

from runs import lifecycle
from runs.temporal import types as t
from runs.temporal.activities import BOOKKEEPING_ACTIVITIES, bookkeeping_activity


def _stage(name: str, seconds: float, run_id: str) -> str:
    lifecycle.stage_begin(run_id, t.STAGE_OF[name])
    time.sleep(seconds)
    lifecycle.stage_pass(run_id, t.STAGE_OF[name])
    return f"stub-{name}"


def stub_activities(seconds: float = 0.0) -> list:
    """Every stage a stub taking ``seconds``; the real bookkeeping activities."""
    stubs = [
        bookkeeping_activity(name, functools.partial(_stage, name, seconds)) for name, _ in t.STAGES
    ]
    return [*stubs, *BOOKKEEPING_ACTIVITIES]
