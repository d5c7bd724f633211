"""At most as many agent activities at a time as the pool has processes, and none silent.

The worker takes more activities than it has agent processes (bookkeeping ones run in its
event loop, and slots are shared). An agent activity handed to a busy process pool would wait
in the pool's queue without a heartbeat (the agent heartbeats only once its process runs), so
Temporal would time it out and start it again while the queued copy still runs later: two
LLM conversations for one stage. :class:`AgentPoolGate` keeps the waiting ones here instead,
heartbeating from the worker, and goes on heartbeating for an admitted one until its agent
process heartbeats itself (a process is being spawned meanwhile). A cancel reaches a waiting
one too. The gated ones: every activity run in the pool (VerifyTests), and the agent stages
(``types.AGENT_STAGES``), whose agent the activity hands to the pool. Activities run in the
worker (bookkeeping, CreatePullRequest) pass straight through.
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

from runs.temporal.types import AGENT_STAGES

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
        self.agent_alive = asyncio.Event()

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        self.outbound = outbound
        super().init(_Watched(outbound, self.agent_alive))

    async def execute_activity(self, input: ExecuteActivityInput):
        in_pool = input.executor is not None or activity.info().activity_type in AGENT_STAGES
        if not in_pool:
            return await super().execute_activity(input)  # runs in the worker, not the pool
        every = beat_interval()
        await self._wait_for_a_process(every)
        # An agent stage heartbeats from the worker itself (activities.py); a whole activity in
        # the pool (VerifyTests) from its process, and from here until that process runs.
        beating = input.executor and asyncio.create_task(self._beat_until_the_agent_does(every))
        try:
            return await super().execute_activity(input)
        finally:
            if beating:
                beating.cancel()
            self.free.release()

    async def _wait_for_a_process(self, every: float) -> None:
        acquiring = asyncio.ensure_future(self.free.acquire())
        while not (await asyncio.wait({acquiring}, timeout=every))[0]:
            if activity.is_cancelled():
                if not acquiring.cancel():  # acquired in the meantime: give it back
                    self.free.release()
                raise CancelledError(NOT_STARTED)
            self.outbound.heartbeat()

    async def _beat_until_the_agent_does(self, every: float) -> None:
        while not self.agent_alive.is_set():
            self.outbound.heartbeat()
            try:
                await asyncio.wait_for(self.agent_alive.wait(), every)
            except TimeoutError:
                pass


class _Watched(ActivityOutboundInterceptor):
    """The heartbeats the agent process sends pass here: it is alive."""

    def __init__(self, next: ActivityOutboundInterceptor, alive: asyncio.Event) -> None:
        super().__init__(next)
        self.alive = alive

    def heartbeat(self, *details) -> None:
        self.alive.set()
        super().heartbeat(*details)
