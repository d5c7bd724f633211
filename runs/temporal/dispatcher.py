"""The run starts dispatcher: starts the workflows of accepted runs (the ``run_starts``
outbox, :func:`runs.services.run_starts_dispatch`) in a thread of each worker process.

It wakes when PostgreSQL notifies ``amtp_run_starts`` (a trigger on every insert into the
outbox), and every ``POLL_S`` anyway, so a notification missed while it reconnected delays
nothing for long. Any number of workers may run it: each claims rows the others are not
starting. While Temporal or PostgreSQL cannot be reached it tries again, waiting twice as long
each time up to ``MAX_BACKOFF_S``; the runs wait ``pending`` in the outbox meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from django.db import DatabaseError, connection

from amtp_site.errors import OrchestratorUnavailable
from runs.services import run_starts_dispatch

log = logging.getLogger(__name__)

CHANNEL = "amtp_run_starts"
POLL_S = 5.0
MAX_BACKOFF_S = 30.0
WAKE_S = 0.5  # how soon stop() is noticed


class StartDispatcher:
    """``start()`` / ``stop()``; ``batch`` runs per claim. ``dispatched`` counts the runs it
    took off the outbox; ``drained`` is set each time it found the outbox empty."""

    def __init__(self, batch: int = 100) -> None:
        self.batch = batch
        self.dispatched = 0
        self.drained = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name="run-starts")

    def start(self) -> StartDispatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _main(self) -> None:
        self._backoff = 0.0
        try:
            while not self._stop.is_set():
                try:
                    self._serve()
                except Exception as exc:  # noqa: BLE001 - it must outlive any one failure
                    backoff = self._backoff = min(MAX_BACKOFF_S, max(0.5, self._backoff * 2))
                    expected = (OrchestratorUnavailable, DatabaseError, psycopg.Error)
                    log.warning(
                        "run starts: %s; trying again in %.1f s",
                        exc,
                        backoff,
                        exc_info=not isinstance(exc, expected),
                    )
                    connection.close()  # a broken connection is replaced on the next try
                    self._stop.wait(backoff)
        finally:
            connection.close()

    def _serve(self) -> None:
        """LISTEN on this thread's database connection; drain the outbox whenever notified,
        and every POLL_S, until stopped (or until something fails: the caller backs off)."""
        connection.ensure_connection()
        raw = connection.connection  # Django's own, in autocommit: notifications arrive
        raw.execute(f"LISTEN {CHANNEL}")
        due = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= due:
                # Until a claim comes back short: the outbox was empty then, and a row added
                # since has sent a notification, which psycopg keeps for notifies() below.
                while taken := run_starts_dispatch(self.batch):
                    self.dispatched += taken
                    if taken < self.batch:
                        break
                self.drained.set()
                self._backoff = 0.0  # Temporal and PostgreSQL answer again
                due = time.monotonic() + POLL_S
            for _ in raw.notifies(timeout=WAKE_S, stop_after=1):
                due = 0.0
