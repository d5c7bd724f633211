"""A run's end, written as its workflow decided it: the one place a live run is finished.

``runs.temporal.reconcile`` is the only other writer of a run's end: it ends runs whose
workflow is gone, with the same steps.
"""

from __future__ import annotations

from amtp_site import metrics
from runs import lifecycle, slots
from runs.models import Run, RunStatus, Stage
from runs.stages import Failure


def run_end(*, run_id: str, status: str, failure: Failure | None = None) -> bool:
    """Mark the run ``status`` (passed; failed with ``failure`` and its failure report;
    cancelled with its open stages), then give its slot back. Each step is a compare-and-swap
    or idempotent, so a retry ends where the first attempt did. True if this call ended it."""
    if status == RunStatus.PASSED:
        ended = lifecycle.mark_passed(run_id)
    elif status == RunStatus.FAILED and failure is not None:
        ended = lifecycle.mark_failed(failure)
    elif status == RunStatus.CANCELLED:
        ended = lifecycle.mark_cancelled(run_id)
    else:
        raise ValueError(f"a run cannot end {status!r} (failure: {failure!r})")
    slots.slot_release(run_id)
    if ended:
        _count(run_id)
    return ended


def _count(run_id: str) -> None:
    """The run's end and its stages' durations in the metrics (once: by the call that ended it)."""
    trigger, status = Run.objects.filter(pk=run_id).values_list("trigger", "status").get()
    stages = Stage.objects.filter(run_id=run_id).values_list(
        "name", "status", "started_at", "finished_at"
    )
    metrics.run_finished(trigger, status, stages)
