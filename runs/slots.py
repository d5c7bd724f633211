"""A run's slot: one place in its repository's sliding run window and one of its concurrent
runs. The workflow takes the slot (``slot_acquire``) and gives it back (``slot_release``); the
API only looks (``window_check``) so it can answer 429 before creating a run. Both refuse
with the same ``RateLimitExceeded`` and the same message.
"""

from __future__ import annotations

import logging

import redis

from amtp_site import valkey
from amtp_site.errors import RateLimitExceeded, RepoConcurrencyLimited
from amtp_site.valkey import WindowDecision
from amtp_site.valkey_peek import window_peek
from repositories.models import Repository
from runs.models import Run

logger = logging.getLogger(__name__)

RATE_LIMITED = (
    "{repo} already started {count} runs in the last {window} s (limit {limit}); "
    "try again in {retry_after} s"
)
CONCURRENCY_LIMITED = "{repo} already has {limit} runs in progress; waiting"


def _rate_limited(name: str, repository: Repository, window: WindowDecision) -> RateLimitExceeded:
    return RateLimitExceeded(
        RATE_LIMITED.format(
            repo=name,
            count=window.count,
            window=repository.rate_limit_window_seconds,
            limit=repository.rate_limit_runs,
            retry_after=window.retry_after,
        ),
        retry_after=window.retry_after,
    )


def slot_acquire(run_id: str) -> None:
    """Add the run to its repository's window, then count it as running (workflow only)."""
    run = Run.objects.select_related("repository").get(pk=run_id)
    repository = run.repository
    window = valkey.rate_limit_check(
        run.repo_full_name,
        run_id,
        limit=repository.rate_limit_runs,
        window_seconds=repository.rate_limit_window_seconds,
    )
    if not window.allowed:
        raise _rate_limited(run.repo_full_name, repository, window)
    running = valkey.concurrency_incr(run.repo_full_name, run_id)
    if running > repository.max_concurrent_runs:
        valkey.concurrency_decr(run.repo_full_name, run_id)
        raise RepoConcurrencyLimited(
            CONCURRENCY_LIMITED.format(
                repo=run.repo_full_name, limit=repository.max_concurrent_runs
            )
        )


def slot_release(run_id: str) -> None:
    run = Run.objects.get(pk=run_id)
    valkey.concurrency_decr(run.repo_full_name, run_id)


def window_check(repository: Repository) -> None:
    """Raise RateLimitExceeded if the window is full now; only looks, never takes a slot.

    A Valkey failure lets the request through: the workflow checks the window again.
    """
    try:
        window = window_peek(
            repository.full_name,
            limit=repository.rate_limit_runs,
            window_seconds=repository.rate_limit_window_seconds,
        )
    except redis.RedisError as exc:
        logger.warning("rate-limit peek for %s failed: %s", repository.full_name, exc)
        return
    if not window.allowed:
        raise _rate_limited(repository.full_name, repository, window)
