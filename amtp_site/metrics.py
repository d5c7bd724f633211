"""AMTP's own Prometheus metrics (``amtp_*``): their definitions, what updates them, and the
registry a ``/metrics`` page serves.

The web process serves them at ``/metrics`` (:mod:`amtp_site.metrics_view`), the worker on
``AMTP_WORKER_METRICS_ADDRESS`` (:func:`serve`). Every counter is updated in the process that
does the work and never in an agent process (those run the agent only and exit): tokens when
the worker stores an agent's artifact, tests and heals when it stores a verification report,
runs and stage durations when the workflow ends a run, refusals where they are decided.
Under gunicorn (several processes) set ``PROMETHEUS_MULTIPROC_DIR``: each process writes its
values there and :func:`registry` adds them up (docs/deployment.md).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector

log = logging.getLogger(__name__)

RUNS_ACCEPTED = Counter("amtp_runs_accepted", "Runs accepted, by trigger.", ["trigger"])
RUNS_FINISHED = Counter(
    "amtp_runs_finished",
    "Runs ended by their workflow, by trigger and status.",
    ["trigger", "status"],
)
STAGE_SECONDS = Histogram(
    "amtp_stage_duration_seconds",
    "How long each stage of a run took (started to finished), by stage and final status.",
    ["stage", "status"],
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, float("inf")),
)
TESTS = Counter(
    "amtp_tests", "Generated tests verified, by framework and outcome.", ["framework", "outcome"]
)
HEALS = Counter(
    "amtp_heals",
    "Failing tests given to the healer, by result (healed, or not: quarantined or failed).",
    ["result"],
)
REFUSALS = Counter(
    "amtp_refusals",
    "Runs refused or held back by a repository's limit: rate_limit (the run window; the API "
    "answers 429), concurrency (waiting for a slot).",
    ["reason"],
)
LLM_TOKENS = Counter(
    "amtp_llm_tokens",
    "LLM tokens as the vendor reported them, by agent, model and direction (input, output).",
    ["agent", "model", "direction"],
)
LLM_COST_USD = Counter(
    "amtp_llm_cost_usd", "LLM cost in US dollars, by agent and model.", ["agent", "model"]
)

HEAL_SUCCESS = "healed"
HEAL_FAILURE = "not_healed"


def run_accepted(trigger: str) -> None:
    RUNS_ACCEPTED.labels(trigger).inc()


def refused(reason: str) -> None:
    REFUSALS.labels(reason).inc()


def run_finished(trigger: str, status: str, stages: Iterable[tuple]) -> None:
    """A run ended: ``stages`` as (name, status, started_at, finished_at)."""
    RUNS_FINISHED.labels(trigger, status).inc()
    for name, stage_status, started, finished in stages:
        if started is not None and finished is not None:
            STAGE_SECONDS.labels(name, stage_status).observe((finished - started).total_seconds())


def llm_usage(meta: dict) -> None:
    """The tokens an artifact's ``meta`` reports: an agent's own (``usage``), and each
    healing session's (``heal_sessions``) for a verification report."""
    for session in [meta, *meta.get("heal_sessions", [])]:
        usage = session.get("usage")
        if not isinstance(usage, dict):
            continue
        agent, model = str(session.get("agent", "")), str(session.get("model", ""))
        for direction in ("input", "output"):
            tokens = usage.get(f"{direction}_tokens")
            if isinstance(tokens, int) and tokens > 0:
                LLM_TOKENS.labels(agent, model, direction).inc(tokens)


def llm_cost(agent: str, model: str, usd: float) -> None:
    if usd > 0:
        LLM_COST_USD.labels(agent, model).inc(usd)


def verification(report: dict) -> None:
    """A verification report's tests by outcome, and its heals."""
    framework = str(report.get("framework", ""))
    for test in report.get("tests", []):
        TESTS.labels(framework, test["status"]).inc()
    if report.get("settings", {}).get("heal_rounds", 0) > 0:
        totals = report.get("totals", {})
        HEALS.labels(HEAL_SUCCESS).inc(totals.get("healed", 0))
        HEALS.labels(HEAL_FAILURE).inc(totals.get("quarantined", 0) + totals.get("failed", 0))


def registry() -> CollectorRegistry:
    """What this process serves: every process's values when ``PROMETHEUS_MULTIPROC_DIR`` is
    set (gunicorn), else this process's own."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    combined = CollectorRegistry()
    MultiProcessCollector(combined)
    return combined


class WaitingRuns(Collector):
    """Runs waiting to start, read from PostgreSQL at scrape time: the ``run_starts`` outbox
    (rows, and the age of the oldest) and the runs still ``pending``. Left out of the page,
    not failing it, while PostgreSQL cannot answer (alert on their absence)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from django.db import DatabaseError

        try:
            outbox, oldest, pending = self._read()
        except DatabaseError as exc:
            log.warning("metrics: runs waiting to start not read from PostgreSQL: %s", exc)
            return
        yield GaugeMetricFamily(
            "amtp_run_starts_waiting",
            "Accepted runs whose workflow no worker has started yet (the run_starts outbox).",
            value=outbox,
        )
        yield GaugeMetricFamily(
            "amtp_run_starts_oldest_seconds",
            "Age of the oldest run waiting in the run_starts outbox (0 when none waits).",
            value=float(oldest),
        )
        yield GaugeMetricFamily(
            "amtp_runs_pending", "Runs pending: accepted, not started yet.", value=pending
        )

    @staticmethod
    def _read() -> tuple:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), "
                "GREATEST(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0) "
                "FROM run_starts"
            )
            outbox, oldest = cursor.fetchone()
            cursor.execute("SELECT count(*) FROM runs WHERE status = 'pending'")
            (pending,) = cursor.fetchone()
        return outbox, oldest, pending


_served: set[str] = set()


def serve(address: str) -> None:
    """Serve this process's metrics on ``HOST:PORT`` (the worker), in a daemon thread; once
    per address and process."""
    if address in _served:
        return
    host, _, port = address.rpartition(":")
    start_http_server(int(port), addr=host.strip("[]") or "127.0.0.1", registry=registry())
    _served.add(address)
    log.info("AMTP metrics on http://%s/metrics", address)
