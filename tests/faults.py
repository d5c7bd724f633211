"""Fault injection for the crash-recovery tests (tests/test_worker_crash.py), test side only.

:class:`FaultOnce` is a Temporal worker interceptor. For one agent activity it hands the
worker's agent process pool :func:`_in_agent_process` instead of the activity itself: in the
agent process, that runs the real activity with one change, right after the stage's artifact is
committed (before the stage is marked passed and the result reported), the agent process dies
(``crash``) or hangs until it is killed (``hang``). Once: the marker file records that it
happened, with the pid of the process. The interceptor runs in the worker process, the fault in
the agent process, so what dies is the process that did the work, as in a real crash.
``python -m tests.worker_process <queue> 1 fault:<activity>:<crash|hang>:<marker>`` runs the
real worker process with it (tests/worker_process.py).
"""

from __future__ import annotations

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
    action: str  # "crash" (os._exit) or "hang"
    marker: str  # written (the agent process's pid) when the fault fires; then it never again

    @classmethod
    def parse(cls, spec: str) -> Fault:
        return cls(*spec.split(":", 2))

    def fire(self) -> None:
        if Path(self.marker).exists():
            return
        Path(self.marker).write_text(str(os.getpid()))
        if self.action == "crash":
            os._exit(70)
        time.sleep(3600)


def _in_agent_process(fault: Fault, fn, *args):
    """Picklable (module-level): the pool sends it to a fresh agent process, which ends with
    the task, so the patch below never outlives this one activity."""
    from runs import pipeline

    persist = pipeline._persist

    def persist_then_fault(*a, **kw) -> str:
        artifact_id = persist(*a, **kw)  # committed: a retry must reuse it, not call the LLM
        fault.fire()
        return artifact_id

    pipeline._persist = persist_then_fault
    return fn(*args)


@dataclasses.dataclass(frozen=True)
class BadAnswer:
    """The model's raw answer in ``activity``'s agent process, on the given attempts of it:
    what a real model sometimes sends (prose instead of JSON, JSON off the contract)."""

    activity: str
    text: str
    attempts: tuple[int, ...] = (1,)


def _answer_badly(bad: BadAnswer, fn, *args):
    """Picklable, in the agent process (which ends with the activity, and the patch with it)."""
    if activity.info().attempt in bad.attempts:
        from agents.providers.base import Completion
        from agents.providers.offline import OfflineProvider

        def complete(self, **_) -> Completion:
            return Completion(text=bad.text, stop_reason="end_turn")

        OfflineProvider.complete = complete
    return fn(*args)


class FaultOnce(Interceptor):
    """Worker interceptor: ``fault`` (a Fault, or a BadAnswer) in its activity's process."""

    def __init__(self, fault: Fault | BadAnswer) -> None:
        self.fault = fault
        self.inject = _answer_badly if isinstance(fault, BadAnswer) else _in_agent_process

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next, self)


class _Inbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, outer: FaultOnce) -> None:
        super().__init__(next)
        self.outer = outer

    async def execute_activity(self, input: ExecuteActivityInput):
        if activity.info().activity_type == self.outer.fault.activity:
            faulty = functools.partial(self.outer.inject, self.outer.fault, input.fn)
            input = dataclasses.replace(input, fn=faulty)
        return await super().execute_activity(input)
