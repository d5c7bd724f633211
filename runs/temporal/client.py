"""The workflow parameters and retry settings, from settings."""

from __future__ import annotations

from django.conf import settings

from amtp_site.errors import non_retryable_error_types
from runs.stages import (
    CHECK,
    CHECK_WORKFLOW,
    GENERATION,
    MAINTENANCE,
    MAINTENANCE_WORKFLOW,
    WORKFLOW_NAME,
)
from runs.temporal.types import RetrySettings, WorkflowParams

# A run's kind -> its workflow type.
WORKFLOW_OF = {GENERATION: WORKFLOW_NAME, MAINTENANCE: MAINTENANCE_WORKFLOW, CHECK: CHECK_WORKFLOW}


def retry_settings(*, bookkeeping: bool = False) -> RetrySettings:
    """Spec 003's policy. ``bookkeeping``: the same without an attempt cap (0), for the
    activities that only write the run's own state, idempotently: a PostgreSQL or Valkey
    outage of any length delays them, it cannot fail a run whose work is done."""
    policy = settings.AMTP_RETRY_POLICY
    return RetrySettings(
        initial_interval_s=policy["initial_interval"].total_seconds(),
        backoff_coefficient=policy["backoff_coefficient"],
        maximum_interval_s=policy["maximum_interval"].total_seconds(),
        maximum_attempts=0 if bookkeeping else policy["maximum_attempts"],
        non_retryable_error_types=non_retryable_error_types(),
    )


def workflow_of(run) -> str:
    """The workflow type of the run's kind."""
    return WORKFLOW_OF[run.kind]


def workflow_params(run) -> WorkflowParams:
    return WorkflowParams(
        run_id=str(run.run_id),
        require_approval=run.repository.require_approval or run.held,
        retry=retry_settings(),
        bookkeeping_retry=retry_settings(bookkeeping=True),
        agent_timeout_s=settings.AMTP_AGENT_ACTIVITY_TIMEOUT_S,
        heartbeat_timeout_s=settings.AMTP_HEARTBEAT_TIMEOUT_S,
        bookkeeping_timeout_s=settings.AMTP_BOOKKEEPING_TIMEOUT_S,
        approval_timeout_s=settings.AMTP_APPROVAL_TIMEOUT_S,
        slot_wait_s=settings.AMTP_SLOT_WAIT_S,
    )
