"""Retention: finished runs older than their repository's retention, removed with everything
that hangs off them (stages, artifacts, approvals, idempotency, notification and cost rows,
their share of the daily rollups, the evidence folder), in small batches.

Kept whatever their age: runs not finished (pending, running, and so held for approval) and
runs whose pull request is still open, as their repository host says at the start. When the
host cannot say, every run of that repository with a pull request is kept.

Each batch is one short transaction over at most ``batch_size`` runs picked in page order
(keyset over ``(created_at, run_id)`` on ``runs_repository_page``): it locks only the rows it
deletes, old finished runs nothing writes any more, and the lists read without locks, so
nothing waits for it.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from amtp_site import rows
from approvals.models import Approval
from notifications.models import Notification
from reporting.models import RunHealth
from repositories.hosts import host_for
from repositories.models import Repository
from runs.models import ActivityIdempotency, Artifact, Run, RunCost, RunStart, Stage, StageStatus
from triggers.models import WebhookDelivery

logger = logging.getLogger(__name__)
MAX_BATCH = 10_000
TERMINAL = [str(status) for status in Run.TERMINAL]

_BATCH = """
SELECT r.run_id, r.created_at, r.pr_number FROM runs r
WHERE r.repository_id = %(repository)s AND r.created_at < %(cutoff)s
  AND (r.created_at, r.run_id) > (%(after_at)s, %(after_id)s)
  AND r.status = ANY(%(terminal)s)
  AND NOT EXISTS (
    SELECT FROM stages s WHERE s.run_id = r.run_id AND s.status = %(held)s)
ORDER BY r.created_at, r.run_id
LIMIT %(limit)s
"""
_OLD = "SELECT count(*) FROM runs WHERE repository_id = %s AND created_at < %s"


@dataclass
class Pruned:
    """What one repository's pruning did (or would do, in a dry run)."""

    repository: str
    days: int
    removed: int = 0
    kept: int = 0
    evidence: int = 0
    batches: int = 0
    longest_lock_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def retention_days(repository: Repository, older_than: int | None) -> int | None:
    """The days a repository's runs are kept: the command's, the repository's, the default."""
    return older_than or repository.retention_days or settings.AMTP_RETENTION_DAYS


def prune(
    repository: Repository, days: int, *, batch_size: int = 1000, dry_run: bool = False
) -> Pruned:
    """Remove (or, dry, count) the repository's runs older than ``days`` that may go."""
    result = Pruned(repository.full_name, days)
    cutoff = timezone.now() - timedelta(days=days)
    params = {
        "repository": repository.pk,
        "cutoff": cutoff,
        "after_at": datetime.min.replace(tzinfo=cutoff.tzinfo),
        "after_id": "00000000-0000-0000-0000-000000000000",
        "terminal": TERMINAL,
        "held": StageStatus.AWAITING_APPROVAL,
        "limit": min(max(1, batch_size), MAX_BATCH),
    }
    keep = _keeps_pull_request(repository, result)
    with connection.cursor() as cursor:
        cursor.execute(_OLD, [repository.pk, cutoff])
        old = cursor.fetchone()[0]
    while True:
        started = time.monotonic()
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(_BATCH, params)
                batch = cursor.fetchall()
            if not batch:
                break
            ids = [run_id for run_id, _, pr_number in batch if not keep(pr_number)]
            if ids and not dry_run:
                _delete(ids)
        result.longest_lock_s = max(result.longest_lock_s, time.monotonic() - started)
        result.batches += 1
        result.removed += len(ids)
        result.evidence += _evidence(ids, dry_run)
        params["after_id"], params["after_at"], _ = batch[-1]
    result.kept = old - result.removed
    return result


def _keeps_pull_request(repository: Repository, result: Pruned) -> Callable[[int | None], bool]:
    """Whether a run with this pull request number stays: its PR is open, or the host could
    not say which are (checked in Python: an open list can be long)."""
    try:
        open_numbers = host_for(repository).open_pull_request_numbers()
    except Exception as exc:
        result.notes.append(
            f"its host could not list the open pull requests ({type(exc).__name__}: "
            f"{str(exc)[:200]}): every run with a pull request is kept"
        )
        return lambda number: number is not None
    return lambda number: number in open_numbers


def _delete(ids: list) -> None:
    """The batch's rows, children first (foreign keys have no ON DELETE in the database)."""
    with connection.cursor() as cursor:
        # Out of the daily rollups first: they count the runs that exist.
        cursor.execute("SELECT amtp_rollup_runs(%s::uuid[], -1)", [ids])
        tables = (
            Approval,
            ActivityIdempotency,
            Artifact,
            Notification,
            RunCost,
            RunHealth,
            RunStart,
            Stage,
        )
        for model in tables:
            cursor.execute(f"DELETE FROM {rows.table(model)} WHERE run_id = ANY(%s)", [ids])  # noqa: S608
        cursor.execute(
            f"UPDATE {rows.table(WebhookDelivery)} SET run_id = NULL WHERE run_id = ANY(%s)",  # noqa: S608
            [ids],
        )
        cursor.execute("DELETE FROM runs WHERE run_id = ANY(%s)", [ids])


def _evidence(ids: list, dry_run: bool) -> int:
    """Remove the batch's evidence folders (after its commit: a folder whose run stayed is
    never lost); how many there were."""
    root = settings.AMTP_VERIFY_EVIDENCE_DIR
    found = 0
    for run_id in ids:
        folder = root / str(run_id)
        if folder.is_symlink() or not folder.is_dir():
            continue
        found += 1
        if not dry_run:
            shutil.rmtree(folder, ignore_errors=True)
    return found
