"""At most as many agent activities at a time as the pool has processes, and none silent.

The worker takes more activities than it has agent processes (bookkeeping ones run in its
event loop, and slots are shared). An agent activity whose agent waited in a busy process
pool's queue would have no say about it, and a cancel would not reach it. :class:`AgentPoolGate`
keeps the waiting ones here instead, heartbeating from the worker (so Temporal does not time
them out and start them again while the queued copy still runs later: two LLM conversations
for one stage), and a cancel reaches a waiting one too. The gated ones are the activities
whose agents run in the pool (``POOL_STAGES``: the agent stages, and VerifyTests for its
healing session); each holds one process's place until it ends. Activities run in the worker
alone (bookkeeping, CreatePullRequest) pass straight through.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.exceptions import CancelledError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from runs.temporal.types import AGENT_STAGES, REVERIFY_TESTS, VERIFY_TESTS

POOL_STAGES = (*AGENT_STAGES, VERIFY_TESTS, REVERIFY_TESTS)

NOT_STARTED = "cancelled while waiting for an agent process"


def beat_interval() -> float:
    """A quarter of the activity's heartbeat timeout (at least 1 s), 15 s without one."""
    timeout = activity.info().heartbeat_timeout
    return max(1.0, timeout.total_seconds() / 4 if timeout else 15.0)


class AgentPoolGate(Interceptor):
    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._free: asyncio.Semaphore | None = None  # made in the worker's event loop

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        if self._free is None:
            self._free = asyncio.Semaphore(self.processes)
        return _Gate(next, self._free)


class _Gate(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, free: asyncio.Semaphore) -> None:
        super().__init__(next)
        self.free = free

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        self.outbound = outbound
        super().init(outbound)

    async def execute_activity(self, input: ExecuteActivityInput):
        if activity.info().activity_type not in POOL_STAGES:
            return await super().execute_activity(input)  # runs in the worker, not the pool
        await self._wait_for_a_process(beat_interval())
        try:
            return await super().execute_activity(input)  # it heartbeats itself meanwhile
        finally:
            self.free.release()

    async def _wait_for_a_process(self, every: float) -> None:
        acquiring = asyncio.ensure_future(self.free.acquire())
        while not (await asyncio.wait({acquiring}, timeout=every))[0]:
            if activity.is_cancelled():
                if not acquiring.cancel():  # acquired in the meantime: give it back
                    self.free.release()
                raise CancelledError(NOT_STARTED)
            self.outbound.heartbeat()
