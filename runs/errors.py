"""Errors of runs: requests about a run, its admission, and the worker running it."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError, RetryableError


class AgentProcessDied(RetryableError):
    """The process running an agent activity died (OOM kill, crash); retried on a fresh one."""


class RepoConcurrencyLimited(RetryableError):
    """The repository already runs its maximum of concurrent runs; wait for one to finish."""


class RateLimitExceeded(NonRetryableError):
    """The repository's sliding-window run limit is exhausted (spec 003: non-retryable)."""


class RunError(NonRetryableError):
    """A request about a run that cannot be honoured (the message says why)."""


class OrchestratorUnavailable(RunError):
    """Temporal could not be reached; the run row is kept ``pending`` and can be retried."""


class IdempotencyKeyReused(RunError):
    """A request key that already created a run was sent again with different inputs."""


class RunInputInvalid(RunError):
    """An input of a run that breaks a rule (a target URL the verifier would refuse, say);
    ``field`` names it, ``rule`` is the rule alone. Nothing was written."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}", field=field, rule=rule)
        self.field = field
        self.rule = rule


class RunNotActive(NonRetryableError):
    """The run finished (e.g. was cancelled) while this activity waited to run."""


class PushNotChecked(RetryableError):
    """The repository host could not say whether a pushed (or deployed) SHA is its branch's
    head, so the delivery was neither started nor recorded (GitHub's redelivery retries it)."""


class NotificationRefused(NonRetryableError):
    """A notification its repository's settings no longer allow (no address or webhook any
    more, a webhook name that now resolves to a private or metadata address): not sent, and
    not tried again. Never reaches Temporal: sending happens beside the run."""
