"""Fault injection for the crash-recovery tests (tests/test_worker_crash.py), test side only.

:class:`FaultOnce` is a Temporal worker interceptor for one agent activity:

- ``crash``: the activity's agent process dies (``os._exit``) once it has its answer, before
  handing it to the worker. Nothing of it was stored: the retry runs the agent again, in a
  fresh process. (Through the agent pool, which the worker lets an interceptor wrap.)
- ``hang``: the worker hangs right after it has committed the stage's artifact, before the
  stage is marked passed and the result reported, until it is killed; a retry must reuse that
  artifact, not call the LLM again (ReverifyTests: its report, not run the tests again).
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
import contextlib
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

from runs.stages import REVERIFY_TESTS


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


def after_step(owner, name: str, then):
    """A context manager ``during(value)``: while it is open, ``owner.<name>`` (a class or
    module, loaded by ``owner()``) calls ``then(value)`` once it has returned, in the activity
    that opened it and the worker threads it hands work to, and nowhere else (the worker runs
    other activities beside it). The step is patched once per process, on first use."""
    value_here: contextvars.ContextVar = contextvars.ContextVar(name, default=None)

    @functools.cache
    def patch() -> None:
        target = owner()
        original = getattr(target, name)

        def step_then(*a, **kw):
            result = original(*a, **kw)
            if (value := value_here.get()) is not None:
                then(value)
            return result

        setattr(target, name, step_then)

    @contextlib.contextmanager
    def during(value):
        patch()
        token = value_here.set(value)
        try:
            yield
        finally:
            value_here.reset(token)

    return during


def _pipeline():
    from runs import pipeline

    return pipeline


def _maintenance():
    from runs import maintenance

    return maintenance


# "hang": once the artifact is committed, so that a retry must reuse it, not call the LLM
# (ReverifyTests: not run the tests again).
_hang_after_storing = after_step(_pipeline, "_persist", Fault.fire)
_hang_after_reverifying = after_step(_maintenance, "_persist", Fault.fire)


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
        reverify = self.fault.activity == REVERIFY_TESTS
        with (_hang_after_reverifying if reverify else _hang_after_storing)(self.fault):
            return await super().execute_activity(input)
