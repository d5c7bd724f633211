"""Slow stages for the cancellation and heartbeat tests, test side only (like tests/faults.py).

:class:`SlowDown` is a Temporal worker interceptor. In the agent process that runs
``activity``, one step takes ``seconds`` more, with the agent's heartbeats going on:

- ``where="after_writing"`` (CreatePullRequest): the local host writes the branch and the
  pull request as usual, writes ``marker`` (the agent process's pid), then takes its time, as
  a GitHub host does between writes, with the run's ``pr_lock`` held. A cancel sent once the
  marker exists arrives while CreatePullRequest is writing; a worker killed then dies after
  the PR was written, before the activity completes. With ``release``, the host goes on as
  soon as that file exists (at most ``seconds``); with ``once``, only the first writer (the
  one that wrote ``marker``) is slowed.
- ``where="at_start"``: the stage takes its time before it begins (a long LLM call).

``Slow.parse("<activity>:<seconds>:<marker>[:<release>]")`` is the after-writing-once form
that ``python -m tests.worker_process`` takes on its command line.
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
    release: str = ""
    once: bool = False

    @classmethod
    def parse(cls, spec: str) -> Slow:
        activity, seconds, marker, release = [*spec.split(":", 3), ""][:4]
        return cls(activity, float(seconds), marker=marker, release=release, once=True)

    def take_time(self) -> None:
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline and not (self.release and Path(self.release).exists()):
            time.sleep(0.05)


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
        if slow.where == "after_writing" and not (slow.once and Path(slow.marker).exists()):
            Path(slow.marker).write_text(str(os.getpid()))
            slow.take_time()
        return result

    setattr(patched, name, slow_down)
    return fn(*args)


class SlowDown(Interceptor):
    def __init__(self, activity: str, seconds: float, where="after_writing", **more) -> None:
        self.slow = Slow(activity, seconds, where, **more)

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
