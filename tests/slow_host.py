"""Slow stages for the cancellation and heartbeat tests, test side only (like tests/faults.py).

:class:`SlowDown` is a Temporal worker interceptor. In the agent process that runs
``activity``, one step takes ``seconds`` more, with the agent's heartbeats going on:

- ``where="after_writing"`` (CreatePullRequest): the local host writes the branch and the
  pull request as usual, writes ``marker`` (the agent process's pid), then takes its time, as
  a GitHub host does between writes. A cancel sent once the marker exists arrives while
  CreatePullRequest is writing.
- ``where="at_start"``: the stage takes its time before it begins (a long LLM call).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from pathlib import Path

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor


@dataclasses.dataclass(frozen=True)
class Slow:
    activity: str
    seconds: float
    where: str = "after_writing"
    marker: str = ""


def _in_agent_process(slow: Slow, fn, *args):
    """Picklable (module-level); the patch dies with the agent process (one task each)."""
    if slow.where == "after_writing":
        from repositories.hosts.local import LocalGitHost as patched

        name = "open_pull_request"
    else:
        from runs import pipeline as patched

        name = "_begin"
    original = getattr(patched, name)

    def slow_down(*a, **kw):
        if slow.where == "at_start":
            time.sleep(slow.seconds)
        result = original(*a, **kw)
        if slow.where == "after_writing":
            Path(slow.marker).write_text(str(os.getpid()))
            time.sleep(slow.seconds)
        return result

    setattr(patched, name, slow_down)
    return fn(*args)


class SlowDown(Interceptor):
    def __init__(self, activity: str, seconds: float, where="after_writing", marker="") -> None:
        self.slow = Slow(activity, seconds, where, marker)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self.slow)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, slow: Slow) -> None:
        super().__init__(next)
        self.slow = slow

    async def execute_activity(self, input: ExecuteActivityInput):
        if activity.info().activity_type == self.slow.activity:
            slowed = functools.partial(_in_agent_process, self.slow, input.fn)
            input = dataclasses.replace(input, fn=slowed)
        return await super().execute_activity(input)
