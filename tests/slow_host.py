"""Slow stages for the cancellation and heartbeat tests, test side only (like tests/faults.py).

:class:`SlowDown` is a Temporal worker interceptor. Where ``activity`` runs (its agent
process; the worker itself for CreatePullRequest, which is not an agent), one step takes
``seconds`` more, with the activity's heartbeats going on:

- ``where="after_writing"`` (CreatePullRequest): the local host writes the branch and the
  pull request as usual, writes ``marker`` (the pid of the process it runs in), then takes
  its time, as a GitHub host does between writes, with the run's ``pr_lock`` held. A cancel sent once the
  marker exists arrives while CreatePullRequest is writing; a worker killed then dies after
  the PR was written, before the activity completes. With ``release``, the host goes on as
  soon as that file exists (at most ``seconds``); with ``once``, only the first writer (the
  one that wrote ``marker``) is slowed.
- ``where="at_start"``: the stage takes its time before it begins (a long LLM call).

``Slow.parse("<activity>:<seconds>:<marker>[:<release>]")`` is the after-writing-once form
that ``python -m tests.worker_process`` takes on its command line.
"""

from __future__ import annotations

import contextvars
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


def _patch(where: str, slow_now) -> None:
    """Patch the step ``where`` names: it takes its time whenever ``slow_now()`` gives a Slow."""
    if where == "after_writing":
        from repositories.hosts.local import LocalGitHost as patched

        name = "open_pull_request"
    else:
        from runs import pipeline as patched

        name = "_begin"
    original = getattr(patched, name)

    def slow_down(*a, **kw):
        slow = slow_now()
        if slow is None:
            return original(*a, **kw)
        if where == "at_start":
            time.sleep(slow.seconds)
        result = original(*a, **kw)
        if where == "after_writing" and not (slow.once and Path(slow.marker).exists()):
            Path(slow.marker).write_text(str(os.getpid()))
            slow.take_time()
        return result

    setattr(patched, name, slow_down)


def _in_agent_process(slow: Slow, fn, *args):
    """Picklable (module-level), for an agent activity: the pool runs it in the activity's
    own agent process, which ends with it, and the patch with it."""
    _patch(slow.where, lambda: slow)
    return fn(*args)


# CreatePullRequest runs in the worker, next to other activities: the host is patched once
# per process, and slowed only in the activity that set this (its thread inherits it).
_SLOW_HERE: contextvars.ContextVar[Slow | None] = contextvars.ContextVar("slow", default=None)


@functools.cache
def _patch_this_process() -> None:
    _patch("after_writing", _SLOW_HERE.get)


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
        if activity.info().activity_type != self.slow.activity:
            return await super().execute_activity(input)
        if input.executor is None:  # CreatePullRequest: in this process, in a worker thread
            assert self.slow.where == "after_writing", self.slow
            _patch_this_process()
            token = _SLOW_HERE.set(self.slow)
            try:
                return await super().execute_activity(input)
            finally:
                _SLOW_HERE.reset(token)
        slowed = functools.partial(_in_agent_process, self.slow, input.fn)
        return await super().execute_activity(dataclasses.replace(input, fn=slowed))
