"""Errors of repository access: settings, hosts, branches and pull requests."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError, RetryableError


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


class DraftPullRequestsUnsupported(NonRetryableError):
    """The host refused a draft pull request (GitHub: not offered by the repository's plan)."""


class CredentialsUnavailable(NonRetryableError):
    """A repository's login credentials cannot be had: no key to decrypt them
    (``AMTP_CREDENTIALS_KEY``), a key that does not open them, or an environment variable the
    recipe names that the worker does not have. The message names what to set, never a value."""
