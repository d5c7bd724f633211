"""Write paths every surface calls (admin, launch form, API, webhooks, CLI)."""

from __future__ import annotations

import uuid

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

import schemas
from amtp_site.errors import OrchestratorUnavailable, RunError
from amtp_site.temporal import connect
from repositories.models import Repository
from runs import lifecycle
from runs.models import Run
from runs.temporal.client import workflow_params
from runs.temporal.types import WORKFLOW_NAME

RUN_FINISHED = "run {run_id} already finished ({status}); nothing to cancel"


def run_create(
    *,
    repository: Repository,
    ref: str = "",
    depth_level: str = "",
    target_framework: str = "",
    base_branch: str = "",
    trigger: str = Run.Trigger.API,
    requested_by: str = "",
    request_key: str | None = None,
) -> Run:
    """Validate, insert the run ``pending`` with its stages, start the workflow (id = run id).

    A repeated ``request_key`` returns the run it created the first time.
    """
    if request_key:
        existing = Run.objects.filter(request_key=request_key).first()
        if existing is not None:
            if existing.status == Run.Status.PENDING:
                run_start(existing)  # the first request may have met an unreachable Temporal
            return existing
    run_id = uuid.uuid4()
    ref = ref or repository.default_branch
    depth_level = depth_level or repository.default_depth_level
    schemas.validate(
        "repo_crawler/input",
        {
            "run_id": str(run_id),
            "repo_full_name": repository.full_name,
            "ref": ref,
            "depth_level": depth_level,
        },
    )
    try:
        with transaction.atomic():
            run = Run.objects.create(
                run_id=run_id,
                repository=repository,
                repo_full_name=repository.full_name,
                ref=ref,
                depth_level=depth_level,
                target_framework=target_framework or repository.default_framework,
                base_branch=base_branch or repository.default_branch,
                trigger=trigger,
                requested_by=requested_by[:200],
                request_key=request_key or None,
            )
            lifecycle.create_stages(run)
    except IntegrityError:
        if request_key:  # a concurrent duplicate request won the race
            return Run.objects.get(request_key=request_key)
        raise
    run_start(run)
    return run


def run_start(run: Run) -> None:
    async def start():
        client = await connect()
        await client.start_workflow(
            WORKFLOW_NAME,
            workflow_params(run),
            id=str(run.run_id),
            task_queue=settings.TEMPORAL_TASK_QUEUE,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )

    try:
        async_to_sync(start)()
    except WorkflowAlreadyStartedError:
        pass  # the same run started twice is still one workflow
    except RuntimeError as exc:
        raise OrchestratorUnavailable(
            f"could not start run {run.run_id} on Temporal at {settings.TEMPORAL_ADDRESS}: {exc}; "
            "the run stays pending"
        ) from exc


def run_cancel(*, run: Run) -> None:
    """Ask Temporal to cancel; the workflow marks the run and its open stages ``cancelled``."""
    run.refresh_from_db()
    if run.is_terminal:
        raise RunError(RUN_FINISHED.format(run_id=run.run_id, status=run.status))

    async def cancel():
        client = await connect()
        await client.get_workflow_handle(str(run.run_id)).cancel()

    try:
        async_to_sync(cancel)()
    except Exception as exc:  # no workflow (never started): cancel the row directly
        if run.status == Run.Status.PENDING:
            lifecycle.mark_cancelled(str(run.run_id))
            return
        raise OrchestratorUnavailable(f"could not cancel run {run.run_id}: {exc}") from exc


def run_again(*, run: Run, requested_by: str = "", trigger: str = Run.Trigger.FORM) -> Run:
    """A new run with the same inputs (recovery after StaleBaseBranch, or a re-check)."""
    return run_create(
        repository=run.repository,
        ref=run.ref,
        depth_level=run.depth_level,
        target_framework=run.target_framework,
        base_branch=run.base_branch,
        trigger=trigger,
        requested_by=requested_by,
    )
