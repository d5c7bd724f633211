"""The Temporal client factory and the workflow parameters, both from settings."""

from __future__ import annotations

from django.conf import settings
from temporalio.client import Client

from runs.workflow_types import RetrySettings, WorkflowParams


async def connect() -> Client:
    return await Client.connect(
        settings.TEMPORAL_ADDRESS,
        namespace=settings.TEMPORAL_NAMESPACE,
        api_key=settings.TEMPORAL_API_KEY or None,
        tls=settings.TEMPORAL_TLS,
    )


def retry_settings() -> RetrySettings:
    policy = settings.AMTP_RETRY_POLICY
    return RetrySettings(
        initial_interval_s=policy["initial_interval"].total_seconds(),
        backoff_coefficient=policy["backoff_coefficient"],
        maximum_interval_s=policy["maximum_interval"].total_seconds(),
        maximum_attempts=policy["maximum_attempts"],
        non_retryable_error_types=list(policy["non_retryable_error_types"]),
    )


def workflow_params(run) -> WorkflowParams:
    return WorkflowParams(
        run_id=str(run.run_id),
        require_approval=run.repository.require_approval,
        retry=retry_settings(),
        agent_timeout_s=settings.AMTP_AGENT_ACTIVITY_TIMEOUT_S,
        heartbeat_timeout_s=settings.AMTP_HEARTBEAT_TIMEOUT_S,
        bookkeeping_timeout_s=settings.AMTP_BOOKKEEPING_TIMEOUT_S,
        approval_timeout_s=settings.AMTP_APPROVAL_TIMEOUT_S,
    )
