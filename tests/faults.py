"""Fault injection for the crash-recovery tests (tests/test_worker_crash.py), test side only.

:class:`FaultOnce` is a Temporal worker interceptor for one agent activity:

- ``crash``: the activity's agent process dies (``os._exit``) once it has its answer, before
  handing it to the worker. Nothing of it was stored: the retry runs the agent again, in a
  fresh process. (Through the agent pool, which the worker lets an interceptor wrap.)
- ``hang``: the worker hangs right after it has committed the stage's artifact, before the
  stage is marked passed and the result reported, until it is killed; a retry must reuse that
  artifact, not call the LLM again.
- ``exit``: the worker dies (``os._exit``) once the stage has passed, before Temporal hears
  the result; the retry must find the stage done.

``hang`` and ``exit`` stop the worker itself: use them in a worker process of their own.

Once: the marker file records that it happened, with the pid of the process. What dies is the
process that did the work, as in a real crash.
``python -m tests.worker_process <queue> 1 fault:<activity>:<crash|hang>:<marker>`` runs the
real worker process with it (tests/worker_process.py).

:class:`BadAnswer` (through ``FaultOnce`` too): the model's raw answer in the activity's
agent process, on the given attempts.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import functools
import os
import time
from pathlib import Path

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)


@dataclasses.dataclass(frozen=True)
class Fault:
    activity: str  # the activity name, e.g. GenerateTestCases
    action: str  # "crash" (the agent process: os._exit), "hang" or "exit" (the worker)
    marker: str  # written (the process's pid) when the fault fires; then it never again

    @classmethod
    def parse(cls, spec: str) -> Fault:
        return cls(*spec.split(":", 2))

    def fire(self) -> None:
        if Path(self.marker).exists():
            return
        Path(self.marker).write_text(str(os.getpid()))
        if self.action in ("crash", "exit"):
            os._exit(70)
        time.sleep(3600)


@dataclasses.dataclass(frozen=True)
class BadAnswer:
    """The model's raw answer in ``activity``'s agent process, on the given attempts of it:
    what a real model sometimes sends (prose instead of JSON, JSON off the contract)."""

    activity: str
    text: str
    attempts: tuple[int, ...] = (1,)


def _crash_after_answering(fault: Fault, attempt: int, call):
    """Picklable (module-level): runs in the agent process, which ends with the activity."""
    result = call()
    fault.fire()
    return result


def _answer_badly(bad: BadAnswer, attempt: int, call):
    """Picklable, in the agent process (which ends with the activity, and the patch with it)."""
    if attempt in bad.attempts:
        from agents.providers.base import Completion
        from agents.providers.offline import OfflineProvider

        def complete(self, **_) -> Completion:
            return Completion(text=bad.text, stop_reason="end_turn")

        OfflineProvider.complete = complete
    return call()


class AgentPoolWith(concurrent.futures.Executor):
    """The worker's agent pool, running ``inject(what, attempt, call)`` instead of ``call``
    for ``what.activity``'s agent process (the pool is handed the call in the activity)."""

    def __init__(self, pool: concurrent.futures.Executor, what, inject) -> None:
        self.pool, self.what, self.inject = pool, what, inject
        self.max_workers = pool.max_workers

    def submit(self, fn, /, *args, **kwargs) -> concurrent.futures.Future:
        if activity.in_activity() and activity.info().activity_type == self.what.activity:
            fn = functools.partial(self.inject, self.what, activity.info().attempt, fn)
        return self.pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait, cancel_futures=cancel_futures)


# "hang" happens in the worker, next to other activities: the store step is patched once per
# process and hangs only in the activity that set this (its thread inherits it).
_HANG_HERE: contextvars.ContextVar[Fault | None] = contextvars.ContextVar("hang", default=None)


@functools.cache
def _patch_this_process() -> None:
    from runs import pipeline

    persist = pipeline._persist

    def persist_then_fault(*a, **kw):
        artifact = persist(*a, **kw)  # committed: a retry must reuse it, not call the LLM
        if (fault := _HANG_HERE.get()) is not None:
            fault.fire()
        return artifact

    pipeline._persist = persist_then_fault


class FaultOnce(Interceptor):
    """Worker interceptor: ``fault`` (a Fault, or a BadAnswer) in its activity."""

    def __init__(self, fault: Fault | BadAnswer) -> None:
        self.fault = fault

    def agent_pool(self, pool: concurrent.futures.Executor) -> concurrent.futures.Executor:
        if isinstance(self.fault, BadAnswer):
            return AgentPoolWith(pool, self.fault, _answer_badly)
        if self.fault.action == "crash":
            return AgentPoolWith(pool, self.fault, _crash_after_answering)
        return pool

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self.fault)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, fault: Fault | BadAnswer) -> None:
        super().__init__(next)
        self.fault = fault

    async def execute_activity(self, input: ExecuteActivityInput):
        action = self.fault.action if isinstance(self.fault, Fault) else None
        if action not in ("hang", "exit") or activity.info().activity_type != self.fault.activity:
            return await super().execute_activity(input)
        if action == "exit":
            result = await super().execute_activity(input)
            self.fault.fire()
            return result
        _patch_this_process()
        token = _HANG_HERE.set(self.fault)
        try:
            return await super().execute_activity(input)
        finally:
            _HANG_HERE.reset(token)
