"""A run's slot: its place in its repository's sliding run window (the rate limit) and its
place among the repository's runs in progress (the concurrency limit).

A run is admitted to the window once. A surface that can answer "try again later" (the
API's 429) admits it at submit, just before the statement that inserts the run
(``window_admit``; a run whose insert fails gives its place back), so concurrent submits can
never all pass a full window; the workflow admits the others
(``slot_acquire``). The admission is recorded in ``activity_idempotency`` under the
RateLimitCheck activity's key, so the workflow never checks an admitted run again, not even
after its window entry has slid out (a run that waited for a slot, or for Temporal). Both
refuse with the same ``RateLimitExceeded`` and the same message.
"""

from __future__ import annotations

import logging
import re

import redis
from django.conf import settings

from amtp_site import metrics, valkey
from amtp_site.canonical import idempotency_key
from runs import selectors, transitions
from runs.errors import RateLimitExceeded, RepoConcurrencyLimited
from runs.models import ActivityIdempotency, Run, Stage
from runs.stages import ACQUIRE_SLOT
from runs.transitions import OPEN_RUN

logger = logging.getLogger(__name__)

RATE_LIMITED = (
    "{repo} already started {count} runs in the last {window} s (limit {limit}); "
    "try again in {retry_after} s"
)
CONCURRENCY_LIMITED = "{repo} already has {limit} runs in progress; waiting for a slot"
# A counted member is a run id as str(run.run_id) writes it; anything else was never a run's.
_RUN_ID = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def _admission_key(run_id: str) -> str:
    return idempotency_key(run_id, ACQUIRE_SLOT, run_id)


def _admit(run: Run) -> None:
    """Add the run to its repository's window once, or raise RateLimitExceeded."""
    key = _admission_key(str(run.run_id))
    if ActivityIdempotency.objects.filter(idem_key=key).exists():
        return
    _window_check(run)
    ActivityIdempotency.objects.bulk_create([admission(run)], ignore_conflicts=True)


def _window_check(run: Run) -> None:
    repo, repository = run.repo_full_name, run.repository
    limit, seconds = repository.rate_limit_runs, repository.rate_limit_window_seconds
    window = valkey.rate_limit_check(repo, str(run.run_id), limit=limit, window_seconds=seconds)
    if not window.allowed:
        metrics.refused("rate_limit")
        wait = window.retry_after
        message = RATE_LIMITED.format(
            repo=repo, count=window.count, window=seconds, limit=limit, retry_after=wait
        )
        raise RateLimitExceeded(message, retry_after=wait)


def admission(run: Run) -> ActivityIdempotency:
    """The row that records the run's admission (not yet inserted)."""
    return ActivityIdempotency(
        idem_key=_admission_key(str(run.run_id)),
        run=run,
        activity_name=ACQUIRE_SLOT,
        result={"admitted": True},
    )


def window_admit(run: Run) -> bool:
    """Admit a run about to be inserted (True: insert ``admission(run)`` with it), or raise
    RateLimitExceeded. If the insert then fails, call ``window_forget``. False: Valkey could
    not be asked; the run is neither admitted nor refused, and the workflow checks it."""
    try:
        _window_check(run)
    except redis.RedisError as exc:
        logger.warning("rate-limit check for %s failed: %s", run.repo_full_name, exc)
        return False
    return True


def window_forget(run: Run) -> None:
    """Give back the window place of an admitted run that was not inserted after all."""
    try:
        valkey.window_forget(run.repo_full_name, str(run.run_id))
    except redis.RedisError as exc:  # its place slides out with the window
        logger.warning("could not take run %s out of the window: %s", run.run_id, exc)


def slot_acquire(run_id: str) -> None:
    """Admit the run to its window (unless admitted at submit), then count it among the
    repository's runs in progress, or raise RepoConcurrencyLimited (workflow only)."""
    run = selectors.run_with_repository(run_id)
    repository = run.repository
    _admit(run)
    running = _take(run)
    if running > repository.max_concurrent_runs and _forget_finished(run.repo_full_name):
        running = _take(run)  # a finished run's place was never given back: it is free now
    if running > repository.max_concurrent_runs:
        message = CONCURRENCY_LIMITED.format(
            repo=run.repo_full_name, limit=repository.max_concurrent_runs
        )
        # The first stage shows it while the run waits; starting that stage clears it.
        transitions.stage_error(run_id, Stage.ORDER[0], RepoConcurrencyLimited.__name__, message)
        metrics.refused("concurrency")
        raise RepoConcurrencyLimited(message)


def _take(run: Run) -> int:
    return valkey.concurrency_incr(
        run.repo_full_name,
        str(run.run_id),
        limit=run.repository.max_concurrent_runs,
        lease=settings.AMTP_SLOT_LEASE_S,
    )


def _forget_finished(repo: str) -> list[str]:
    """PostgreSQL is the truth: a counted run that is no longer open (its release was lost:
    a crash, an outage) gives its place back."""
    members = valkey.concurrency_members(repo)
    ids = [m for m in members if _RUN_ID.fullmatch(m)]
    open_ids = {
        str(pk)
        for pk in Run.objects.filter(pk__in=ids, status__in=OPEN_RUN).values_list("pk", flat=True)
    }
    finished = [m for m in members if m not in open_ids]
    for member in finished:
        logger.warning("%s: run %s had ended without releasing its slot", repo, member)
        transitions.give_back(repo, member)
    return finished
