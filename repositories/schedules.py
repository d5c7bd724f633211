"""Maintenance on a schedule: one Temporal Schedule per repository whose ``maintenance_every``
is on, kept in step with the setting.

The schedule starts ``ScheduledMaintenance`` (``runs/temporal/scheduled_workflow.py``), whose
one activity creates the maintenance run through ``runs.services.run_create`` like every other
surface, keyed by the scheduled workflow's id, so a retried action never makes a second run.
A schedule skips a firing while its previous action still runs; the activity itself starts
nothing while the repository's previous maintenance run is still going.

The setting is the truth: saving it in admin syncs the schedule at once, and when Temporal
cannot be reached then, :func:`maintenance_schedules_reconcile` (``manage.py
sync_schedules``, and every worker when it starts) creates, updates and deletes schedules
until they match. Schedule ids carry the task queue, so deployments (and test sessions)
sharing a Temporal namespace never touch each other's schedules.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

from django.conf import settings
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.service import RPCError, RPCStatusCode

from amtp_site import temporal
from repositories.models import MaintenanceEvery, Repository

log = logging.getLogger(__name__)

SCHEDULED_MAINTENANCE_WORKFLOW = "ScheduledMaintenance"
START_SCHEDULED_MAINTENANCE = "StartScheduledMaintenance"
EVERY = {MaintenanceEvery.DAILY: timedelta(days=1), MaintenanceEvery.WEEKLY: timedelta(days=7)}
JITTER = timedelta(minutes=30)  # many repositories' schedules do not all fire at midnight UTC
ACTION_TIMEOUT = timedelta(hours=1)  # a database outage longer than this skips one firing
SYNC_TIMEOUT_S = 10
SCHEDULED = "maintenance runs {every}: schedule {schedule_id} {done}"
UNSCHEDULED = "no maintenance schedule: schedule {schedule_id} {done}"
NOT_SYNCED = (
    "the setting is saved, but Temporal could not be reached to {action} its schedule "
    "({error}); the next `manage.py sync_schedules`, or the worker when it starts, will"
)


def schedule_prefix() -> str:
    return f"amtp-maintenance:{settings.TEMPORAL_TASK_QUEUE}:"


def schedule_id(repository_pk: int) -> str:
    return f"{schedule_prefix()}{repository_pk}"


def _schedule(repository: Repository) -> Schedule:
    action = ScheduleActionStartWorkflow(
        SCHEDULED_MAINTENANCE_WORKFLOW,
        repository.pk,
        id=schedule_id(repository.pk),  # Temporal appends each firing's time
        task_queue=settings.TEMPORAL_TASK_QUEUE,
        execution_timeout=ACTION_TIMEOUT,
    )
    spec = ScheduleSpec(
        intervals=[ScheduleIntervalSpec(every=EVERY[repository.maintenance_every])],
        jitter=JITTER,
    )
    return Schedule(
        action=action,
        spec=spec,
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(note=f"AMTP maintenance of {repository.full_name}"),
    )


async def _sync(client: Client, repository: Repository) -> str:
    """Create or update the repository's schedule, or delete it: what was done, in words."""
    sid = schedule_id(repository.pk)
    if repository.maintenance_every not in EVERY:
        try:
            await client.get_schedule_handle(sid).delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise
            return UNSCHEDULED.format(schedule_id=sid, done="(there was none)")
        return UNSCHEDULED.format(schedule_id=sid, done="deleted")
    schedule = _schedule(repository)
    every = repository.get_maintenance_every_display()
    try:
        await client.create_schedule(sid, schedule)
        return SCHEDULED.format(every=every, schedule_id=sid, done="created")
    except ScheduleAlreadyRunningError:
        await client.get_schedule_handle(sid).update(lambda now: _keeping_state(schedule, now))
        return SCHEDULED.format(every=every, schedule_id=sid, done="updated")


def _keeping_state(schedule: Schedule, now: ScheduleUpdateInput) -> ScheduleUpdate:
    """The new spec and action, the schedule's state (a pause made in Temporal) as it is."""
    kept = dataclasses.replace(schedule, state=now.description.schedule.state)
    return ScheduleUpdate(schedule=kept)


def maintenance_schedule_sync(repository: Repository) -> tuple[bool, str]:
    """(whether Temporal has the schedule the setting asks for now, what was done or why
    not). Temporal away is no error: the setting is saved, a reconcile catches up."""
    try:
        return True, temporal.call(lambda c: _sync(c, repository), timeout=SYNC_TIMEOUT_S)
    except Exception as exc:  # unreachable, timed out, refused: all the same to the person
        log.warning("maintenance schedule of %s not synced: %s", repository.full_name, exc)
        action = "set" if repository.maintenance_every in EVERY else "delete"
        return False, NOT_SYNCED.format(action=action, error=str(exc)[:200] or type(exc).__name__)


def scheduled_repositories() -> list[Repository]:
    return list(Repository.objects.exclude(maintenance_every=MaintenanceEvery.OFF))


def maintenance_schedules_sync_all() -> list[str]:
    """:func:`maintenance_schedules_reconcile` from sync code (``manage.py sync_schedules``)."""
    wanted = scheduled_repositories()
    return temporal.call(lambda client: maintenance_schedules_reconcile(client, wanted))


async def maintenance_schedules_reconcile(client: Client, wanted: list[Repository]) -> list[str]:
    """The schedules of ``wanted`` (the repositories whose setting is on) as their settings
    say, and this task queue's other schedules deleted (repository gone or off): what was
    done, one line each."""
    done = [await _sync(client, repository) for repository in wanted]
    keep = {schedule_id(r.pk) for r in wanted}
    prefix = schedule_prefix()
    async for listed in await client.list_schedules():
        ours = listed.id.startswith(prefix) and listed.id[len(prefix) :].isdigit()
        if ours and listed.id not in keep:
            try:
                await client.get_schedule_handle(listed.id).delete()
            except RPCError as exc:
                if exc.status != RPCStatusCode.NOT_FOUND:
                    raise
                continue
            done.append(UNSCHEDULED.format(schedule_id=listed.id, done="deleted"))
    return done
