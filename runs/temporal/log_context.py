"""Every activity's log lines carry the stage it runs (amtp_site.logs; the run id, workflow
id and attempt come from Temporal's activity info)."""

from __future__ import annotations

import contextlib

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from amtp_site import logs
from runs.temporal import types as t


class StageLogContext(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Inbound(next)


class _Inbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput):
        stage = t.STAGE_OF.get(activity.info().activity_type)
        with logs.bound(stage=stage) if stage else contextlib.nullcontext():
            return await super().execute_activity(input)
