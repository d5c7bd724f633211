"""Slow stages for the cancellation and heartbeat tests, test side only (like tests/faults.py).

:class:`SlowDown` is a Temporal worker interceptor. One step of ``activity`` takes
``seconds`` more, with the activity's heartbeats going on:

- ``where="after_writing"`` (CreatePullRequest): the local host writes the branch and the
  pull request as usual, writes ``marker`` (the pid of the process it runs in), then takes
  its time, as a GitHub host does between writes, with the run's ``pr_lock`` held. A cancel
  sent once the marker exists arrives while CreatePullRequest is writing; a worker killed then dies after
  the PR was written, before the activity completes. With ``release``, the host goes on as
  soon as that file exists (at most ``seconds``); with ``once``, only the first writer (the
  one that wrote ``marker``) is slowed.
- ``where="at_start"`` (an agent stage): its agent process takes its time before the agent
  starts (a long LLM call).
- ``where="before"`` (any activity): the activity writes ``marker`` (if given), then takes
  its time, heartbeating, before it starts (ReverifyTests' long Playwright run); a cancel
  sent once the marker exists stops it there.

``Slow.parse("<activity>:<seconds>:<marker>[:<release>]")`` is the after-writing-once form
that ``python -m tests.worker_process`` takes on its command line.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
import time
from pathlib import Path

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from tests.faults import AgentPoolWith, after_step


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


def _slow_start(slow: Slow, attempt: int, call):
    """Picklable (module-level): in the agent process, a long LLM call before the agent's."""
    time.sleep(slow.seconds)
    return call()


def _local_host():
    from repositories.hosts.local import LocalGitHost

    return LocalGitHost


def _hold(slow: Slow) -> None:
    """After writing: the marker (the pid of the process), then the time taken."""
    if not (slow.once and Path(slow.marker).exists()):
        Path(slow.marker).write_text(str(os.getpid()))
        slow.take_time()


# CreatePullRequest runs in the worker, next to other activities: slowed only in its own.
_slow_after_writing = after_step(_local_host, "open_pull_request", _hold)


class SlowDown(Interceptor):
    def __init__(self, activity: str, seconds: float, where="after_writing", **more) -> None:
        self.slow = Slow(activity, seconds, where, **more)

    def agent_pool(self, pool: concurrent.futures.Executor) -> concurrent.futures.Executor:
        if self.slow.where == "at_start":
            return AgentPoolWith(pool, self.slow, _slow_start)
        return pool

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self.slow)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, slow: Slow) -> None:
        super().__init__(next)
        self.slow = slow

    async def execute_activity(self, input: ExecuteActivityInput):
        if activity.info().activity_type != self.slow.activity:
            return await super().execute_activity(input)
        if self.slow.where == "before":
            if self.slow.marker:
                Path(self.slow.marker).write_text(str(os.getpid()))
            deadline = time.monotonic() + self.slow.seconds
            while time.monotonic() < deadline:  # the heartbeat's answer carries a cancel
                activity.heartbeat()
                await asyncio.sleep(0.1)
            return await super().execute_activity(input)
        if self.slow.where != "after_writing":
            return await super().execute_activity(input)
        with _slow_after_writing(self.slow):  # CreatePullRequest: in a worker thread
            return await super().execute_activity(input)
