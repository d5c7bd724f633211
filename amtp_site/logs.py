"""JSON lines for the log (``AMTP_LOG_JSON=true``; the default stays the human format): one
object a line with ``time``, ``level``, ``logger``, ``message`` and, where known, ``run_id``,
``workflow_id`` (the same: a run's workflow id is its run id), ``activity``, ``stage`` and
``attempt``, plus ``exception``. Inside an activity they come from Temporal's activity info
(the worker's threads carry it) and from :func:`bound` (the stage: ``runs.temporal``); a
workflow's own log lines carry its id. Secrets are scrubbed before a line is written
(``repositories.secrets.ScrubbingFilter``, the other filter of that handler).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

from temporalio import activity

_bound: contextvars.ContextVar[tuple] = contextvars.ContextVar("amtp_log_fields", default=())


@contextlib.contextmanager
def bound(**fields) -> Iterator[None]:
    """The block's log lines carry ``fields`` (and so do the threads it hands work to)."""
    token = _bound.set((*_bound.get(), *fields.items()))
    try:
        yield
    finally:
        _bound.reset(token)


def context_fields(record: logging.LogRecord) -> dict:
    fields = dict(_bound.get())
    if activity.in_activity():
        info = activity.info()
        fields.setdefault("run_id", info.workflow_id)
        fields.update(
            workflow_id=info.workflow_id, activity=info.activity_type, attempt=info.attempt
        )
    workflow = getattr(record, "temporal_workflow", None)  # workflow.logger's lines
    if isinstance(workflow, dict) and workflow.get("workflow_id"):
        fields.setdefault("run_id", workflow["workflow_id"])
        fields["workflow_id"] = workflow["workflow_id"]
    return fields


class ContextFilter(logging.Filter):
    """Adds the run's fields (:func:`context_fields`) to every record as ``record.amtp``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.amtp = context_fields(record)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, "amtp", {}),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, default=str, ensure_ascii=False)
