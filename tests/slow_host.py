"""A slow repository host for the cancellation tests, test side only (like tests/faults.py).

:class:`SlowPullRequests` is a Temporal worker interceptor: in the agent process that runs
CreatePullRequest, the local host's ``open_pull_request`` writes the branch and the pull
request as usual, writes ``marker`` (the agent process's pid), then takes ``seconds`` more,
as a GitHub host does between its writes. A cancel sent once the marker exists arrives while
CreatePullRequest is writing.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from pathlib import Path

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from runs.temporal.types import CREATE_PULL_REQUEST


@dataclasses.dataclass(frozen=True)
class Slow:
    marker: str
    seconds: float


def _in_agent_process(slow: Slow, fn, *args):
    """Picklable (module-level); the patch dies with the agent process (one task each)."""
    from repositories.hosts.local import LocalGitHost

    original = LocalGitHost.open_pull_request

    def slow_open(self, **kwargs):
        result = original(self, **kwargs)
        Path(slow.marker).write_text(str(os.getpid()))
        time.sleep(slow.seconds)
        return result

    LocalGitHost.open_pull_request = slow_open
    return fn(*args)


class SlowPullRequests(Interceptor):
    def __init__(self, marker: str, seconds: float) -> None:
        self.slow = Slow(marker, seconds)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self.slow)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, slow: Slow) -> None:
        super().__init__(next)
        self.slow = slow

    async def execute_activity(self, input: ExecuteActivityInput):
        if activity.info().activity_type == CREATE_PULL_REQUEST:
            slowed = functools.partial(_in_agent_process, self.slow, input.fn)
            input = dataclasses.replace(input, fn=slowed)
        return await super().execute_activity(input)
