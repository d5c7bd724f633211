"""Errors of approvals: deciding one."""

from __future__ import annotations

from amtp_site.errors import NonRetryableError


class ApprovalAlreadyDecided(NonRetryableError):
    """An approval can be decided once."""


class ApprovalDecisionInvalid(NonRetryableError):
    """A decision the rules refuse (unknown decision, a reject without a comment, a comment
    over the limit); ``field`` names the input to blame. Nothing was written."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message, field=field)
        self.field = field


class SelfApprovalRefused(NonRetryableError):
    """The decider asked for the run themselves (or owns the token that did), and the
    repository does not allow self-approval: a second person decides. Nothing was written."""
