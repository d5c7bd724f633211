"""What Temporal is told when an activity fails: the error's type, a bounded message.

Temporal matches a retry policy's non-retryable list by the failure's type name, so every
failure keeps its type (an AMTP error also its retryability, details and retry delay). The
server keeps a retried activity's last failure only up to a few KB (beyond that, it shows
"Failure exceeds size limit" instead of the error), so messages and details are bounded and no
cause chain (an agent process's remote traceback) is sent: the traceback goes to the worker's
log instead.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta

from django.db import DatabaseError
from temporalio.exceptions import ApplicationError, FailureError

from amtp_site.errors import AmtpError, amtp_error_in
from runs import artifacts, transitions

logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 1000  # characters of an error's message sent to Temporal
DETAILS_LIMIT = 1000  # characters of an AMTP error's details (as JSON) sent to Temporal


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text``, cut to ``limit`` characters with a note of its full length."""
    if len(text) <= limit:
        return text
    note = f"... ({len(text)} characters; the worker log has the rest)"
    return text[: limit - len(note)] + note


def _details(exc: AmtpError) -> dict:
    details = exc.to_dict()
    if len(json.dumps(details, default=str)) <= DETAILS_LIMIT:
        return details
    return {"error": type(exc).__name__, "message": bounded(exc.message, DETAILS_LIMIT // 2)}


def _named(raised: Exception) -> tuple[str, str, AmtpError | None]:
    """(type name, full message, the AMTP error) of ``raised``: an AMTP error inside an
    exception group or a cause chain keeps its class (a final error raised in a task group
    is not retried)."""
    exc = raised if isinstance(raised, AmtpError) else amtp_error_in(raised)
    if exc is not None:
        return type(exc).__name__, exc.message, exc
    return type(raised).__name__, str(raised) or type(raised).__name__, None


def activity_failure(raised: BaseException) -> BaseException:
    """``raised`` as Temporal is to see it: an ApplicationError with the error's type name
    and a bounded message (an AMTP error with its retryability, details and retry delay).
    Temporal's own failures (a cancel) are returned as they are. Raise the answer ``from
    None``: its cause and traceback are in the worker log."""
    if isinstance(raised, FailureError) or not isinstance(raised, Exception):
        return raised
    error_type, message, exc = _named(raised)
    if exc is None:
        logger.warning("activity failed with %s", error_type, exc_info=raised)
        return ApplicationError(bounded(message), type=error_type)
    retry_after = exc.details.get("retry_after")
    return ApplicationError(
        bounded(message),
        _details(exc),
        type=error_type,
        non_retryable=not exc.retryable,
        next_retry_delay=timedelta(seconds=retry_after) if retry_after else None,
    )


def stage_failure(raised: BaseException, run_id: str, stage: str) -> BaseException:
    """:func:`activity_failure`, after the attempt's error (in full) is shown on the stage
    and what its agent spent (``spent``, set by ``agents.runner``) is added to the run's cost."""
    if isinstance(raised, Exception) and not isinstance(raised, FailureError):
        _note_error(run_id, stage, *_named(raised)[:2], spent=getattr(raised, "spent", None))
    return activity_failure(raised)


def _note_error(
    run_id: str, stage: str, error_type: str, message: str, *, spent: dict | None
) -> None:
    """Show the attempt's error on the stage, best effort: when PostgreSQL is the thing that
    is down, the attempt's own error must still reach Temporal (and its retry policy)."""
    try:
        transitions.stage_error(run_id, stage, error_type, message)
        if isinstance(spent, dict):
            artifacts.spent_record(run_id, spent)
    except DatabaseError as exc:
        logger.warning("could not record %s on %s of run %s: %s", error_type, stage, run_id, exc)
