"""One hierarchy of typed errors, with the spec's names.

Temporal matches ``non_retryable_error_types`` by the exception's *class name*, not by
ancestry, so :func:`non_retryable_error_types` walks this hierarchy and lists every class
whose ``retryable`` is False. The retry policy is derived from code, never typed twice.
"""

from __future__ import annotations

from typing import Any, ClassVar


class AmtpError(Exception):
    """Base of every AMTP error. ``retryable`` tells Temporal whether to try again."""

    retryable: ClassVar[bool] = True

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message or self.__class__.__name__
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": type(self).__name__, "message": self.message, **self.details}

    def __reduce__(self):
        # Rebuilt without calling __init__ (subclasses take other arguments): an error raised
        # in an agent process reaches the worker whole, with its type and details.
        return _unpickle, (type(self), self.args, self.__dict__)


def _unpickle(cls: type[AmtpError], args: tuple, state: dict) -> AmtpError:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class RetryableError(AmtpError):
    retryable = True


class NonRetryableError(AmtpError):
    retryable = False


class ConfigurationError(NonRetryableError):
    """A setting is missing or wrong; no retry can fix it. The message says what to set."""


# --- LLM output -------------------------------------------------------------------------


class MalformedLlmOutput(RetryableError):
    """Sanitised model output is not parseable JSON (spec 000: retryable)."""


class SchemaValidationError(NonRetryableError):
    """Parsed output (or any input) breaks its JSON Schema contract; lists every violation."""

    def __init__(self, schema: str, violations: list[dict[str, str]], message: str = "") -> None:
        lines = "; ".join(f"{v['path']}: {v['message']} ({v['rule']})" for v in violations)
        super().__init__(
            message or f"{schema}: {len(violations)} violation(s): {lines}",
            schema=schema,
            violations=violations,
        )
        self.schema = schema
        self.violations = violations


class ContractViolation(NonRetryableError):
    """Output passes its schema but breaks an agent's own contract rule (e.g. an unsafe path)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message, problems=problems or [message])
        self.problems = problems or [message]


class BudgetExceeded(NonRetryableError):
    """An agent call would exceed a configured budget (tokens, tool calls, bytes, time)."""


class LlmProviderError(RetryableError):
    """The LLM vendor answered with a transient error (429, 5xx, timeout)."""


class LlmProviderRejected(NonRetryableError):
    """The LLM vendor refused the request for good (401, 403, 400 bad request)."""


class LlmQuotaExhausted(LlmProviderRejected):
    """A spend limit or quota is used up (Anthropic's spend-limit 429s, OpenAI's
    ``insufficient_quota``): a 429 that no retry clears until someone raises the limit."""


class LlmOutputTruncated(NonRetryableError):
    """The answer stopped at the output token limit (``max_tokens`` / ``length``); the same
    request would stop there again."""


class LlmRefusal(NonRetryableError):
    """The model declined to answer (stop reason ``refusal``)."""


class LlmContentFiltered(NonRetryableError):
    """The vendor's content filter withheld the answer (``finish_reason: content_filter``)."""


class LlmContextOverflow(NonRetryableError):
    """The conversation does not fit the model's context window."""


# --- Repository hosts and pull requests ------------------------------------------------


class RepositoryAccessError(NonRetryableError):
    """A repository, ref or path that does not exist or cannot be read as asked."""


class RepositoryInvalid(NonRetryableError):
    """Repository settings that break a rule; ``errors`` maps each field to its problems, so
    every surface (admin form, ``launch_run``) can show them on the field they are about."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        shown = "; ".join(f"{field}: {m}" for field, messages in errors.items() for m in messages)
        super().__init__(f"invalid repository settings: {shown}", errors=errors)
        self.errors = errors


class StaleBaseBranch(NonRetryableError):
    """The base branch moved since the crawl (spec 003: terminal, recover with a new run)."""

    def __init__(self, base_branch: str, observed_head: str, expected_parent: str) -> None:
        super().__init__(
            f"base branch {base_branch!r} moved: it is at {observed_head}, "
            f"the crawl used {expected_parent}; start a new run to re-crawl",
            base_branch=base_branch,
            observed_head=observed_head,
            expected_parent=expected_parent,
        )
        self.base_branch = base_branch
        self.observed_head = observed_head
        self.expected_parent = expected_parent


class BranchProtectionViolation(NonRetryableError):
    """GitHub refused the write because of branch protection or a ruleset (403 or 422,
    whatever the wording: repositories/hosts/github_errors.py recognises them)."""

    def __init__(self, body: str) -> None:
        super().__init__(f"branch protection refused the write: {body}", body=body)
        self.body = body


class GitHubForbidden(NonRetryableError):
    """Any other 403: token scope or repository permission."""


class GitHubRateLimited(RetryableError):
    """GitHub's own rate limit; Temporal waits and retries (``retry_after`` seconds hint)."""


class GitHubUnavailable(RetryableError):
    """GitHub answered 5xx or the connection failed."""


class GitTreesApi409(NonRetryableError):
    """The head ref already exists (409/422): adopted by CreatePullRequest, never retried."""


class AgentProcessDied(RetryableError):
    """The process running an agent activity died (OOM kill, crash); retried on a fresh one."""


class RepoPrLockContended(RetryableError):
    """Another run holds the repository's pr_lock; back off and retry."""


class RepoConcurrencyLimited(RetryableError):
    """The repository already runs its maximum of concurrent runs; wait for one to finish."""


class RateLimitExceeded(NonRetryableError):
    """The repository's sliding-window run limit is exhausted (spec 003: non-retryable)."""


# --- Verification (the VerifyTests stage) -----------------------------------------------


class VerificationError(NonRetryableError):
    """The generated tests could not be run (not: they ran and failed). The message says what
    to do; retrying the same run would meet the same problem."""


class TargetUnreachable(VerificationError):
    """The run's target URL did not answer."""


class VerifierNotInstalled(VerificationError):
    """Node, the pinned ``@playwright/test`` package or the Chromium browser is missing."""


class VerificationTimedOut(VerificationError):
    """The tests did not finish within ``AMTP_VERIFY_TIMEOUT_S``."""


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


class ApprovalAlreadyDecided(NonRetryableError):
    """An approval can be decided once."""


class ApprovalDecisionInvalid(NonRetryableError):
    """A decision the rules refuse (unknown decision, a reject without a comment, a comment
    over the limit); ``field`` names the input to blame. Nothing was written."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message, field=field)
        self.field = field


def amtp_error_in(exc: BaseException) -> AmtpError | None:
    """The AmtpError an exception is or wraps: inside exception groups (task groups, e.g. the
    MCP client's) and ``__cause__`` chains. A final (non-retryable) one wins over a retryable
    one, so a wrapper never turns a final error into a retry; None if there is none."""
    found: list[AmtpError] = []
    pending, seen = [exc], set()
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AmtpError):
            found.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.append(current.__cause__)
    return next((e for e in found if not e.retryable), found[0] if found else None)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def non_retryable_error_types() -> list[str]:
    """Every error class name Temporal must not retry, derived from the hierarchy."""
    return sorted({c.__name__ for c in _subclasses(AmtpError) if not c.retryable})
