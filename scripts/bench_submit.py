"""Benchmark ``POST /api/runs`` under concurrent clients against a bare django-ninja INSERT.

Both endpoints are served by one gunicorn started as docs/deployment.md says (gthread
workers, ``--reuse-port``; production settings: DEBUG off) on a free loopback port, over real
HTTP with keep-alive connections. AMTP's endpoint is the product's own (token auth,
validation, the run and its stages in one transaction, admission to the repository's window
in Valkey, its place in the ``run_starts`` outbox); the anchor (scripts/bench_submit_app.py,
never in the product's URLs) does one INSERT. Rounds alternate anchor and AMTP so background
load hits both alike. A process of its own runs run_worker's start dispatcher
(runs/temporal/dispatcher.py) throughout, as a deployment does, so the workflows are started
on Temporal while the requests come in, on the same two cores; the script reports how long
after the last answer the last one was started. No worker polls the runs' task queue: the
runs stay pending, and their workflows are terminated at the end.

    .venv/bin/python scripts/bench_submit.py [--clients 50] [--requests 1000] [--rounds 2]
    .venv/bin/python scripts/bench_submit.py --skip-start   # diagnostic: no dispatcher

Uses its own PostgreSQL database (amtp_bench_submit, recreated), Valkey DB 10 (flushed) and
task queue, and starts the embedded devstack if it is not running. The repository's rate limit
is raised so no request is refused; a 429 or any other non-2xx answer is counted apart and
left out of the latencies. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "amtp_bench_submit"
VALKEY_DB = 10
GOAL = 3.0
REPO = "bench/submit"
ANCHOR_PATH = "/bench-anchor/runs"
API_PATH = "/api/runs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare() -> str:
    """The repository (rate limit raised), a START_RUNS token and the anchor's table."""
    from django.db import connection

    from access.auth import START_RUNS, api_token_create
    from repositories.models import Repository

    Repository.objects.create(
        full_name=REPO, rate_limit_runs=2_000_000_000, rate_limit_window_seconds=60
    )
    _, secret = api_token_create(
        name="bench_submit", scopes=[START_RUNS.scope], actor=None, repositories=[REPO]
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE bench_anchor_row (id bigserial PRIMARY KEY, "
            "repo_full_name varchar(200) NOT NULL, ref varchar(255) NOT NULL, "
            "created_at timestamptz NOT NULL DEFAULT now())"
        )
    from django_redis import get_redis_connection

    get_redis_connection("default").flushdb()
    return secret


def start_dispatcher() -> subprocess.Popen:
    """run_worker's start dispatcher, alone in a process (this script with --dispatcher)."""
    return subprocess.Popen([sys.executable, __file__, "--dispatcher"], cwd=ROOT)


def serve_dispatcher() -> None:
    """The --dispatcher process: the environment (database, task queue) is the parent's."""
    import signal

    from amtp_site.child import django_setup

    django_setup()
    from runs.temporal.dispatcher import StartDispatcher

    dispatcher = StartDispatcher().start()
    signal.sigwait([signal.SIGTERM])
    dispatcher.stop()


def drained(timeout: float = 600) -> tuple[int, float]:
    """Wait until the outbox is empty: (runs still in it, seconds waited)."""
    from runs.models import RunStart

    started = time.perf_counter()
    while (left := RunStart.objects.count()) and time.perf_counter() - started < timeout:
        time.sleep(0.1)
    return left, time.perf_counter() - started


def start_server(port: int, workers: int, threads: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_DEBUG": "false",  # production settings: no query log, no debug pages
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_SECURE_SSL_REDIRECT": "false",  # plain HTTP on loopback
        "AMTP_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "gunicorn", "--pythonpath", f"{ROOT},{ROOT / 'scripts'}"]
    command += ["--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads)]
    command += ["--reuse-port", "--timeout", "60"]  # as docs/deployment.md
    command += ["--bind", f"127.0.0.1:{port}", "--log-level", "warning", "--backlog", "512"]
    server = subprocess.Popen([*command, "bench_submit_app:application"], env=env, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"gunicorn exited with {server.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.terminate()
    raise SystemExit("gunicorn did not answer within 60 s")


def load(port: int, path: str, headers: dict, clients: int, total: int) -> list[tuple]:
    """``total`` POSTs from ``clients`` threads, each on its own keep-alive connection.
    Returns (status, seconds) per request."""
    body = json.dumps({"repo_full_name": REPO}).encode()
    headers = {"Content-Type": "application/json", **headers}
    results: list[tuple] = []
    left = [total]
    lock = threading.Lock()
    go = threading.Barrier(clients)

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        go.wait()
        while True:
            with lock:
                if left[0] <= 0:
                    break
                left[0] -= 1
            started = time.perf_counter()
            try:
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as exc:
                status = type(exc).__name__
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            results.append((status, time.perf_counter() - started))
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def figures(results: list[tuple], seconds: float) -> dict:
    ok = [s for status, s in results if status in (200, 201)]
    q = statistics.quantiles(ok, n=100) if len(ok) > 1 else [float("nan")] * 99
    other: dict = {}
    for status, _ in results:
        if status not in (200, 201):
            other[status] = other.get(status, 0) + 1
    return {
        "ok": len(ok),
        "other": other,
        "p50": q[49] * 1000,
        "p95": q[94] * 1000,
        "p99": q[98] * 1000,
        "per_s": len(results) / seconds,
    }


def terminate_workflows() -> int:
    """The runs' workflows never ran (no worker): end them so they do not linger."""
    import asyncio

    from amtp_site.temporal import connect
    from runs.models import Run

    ids = [str(r) for r in Run.objects.values_list("run_id", flat=True)]

    async def end() -> None:
        client = await connect()
        gate = asyncio.Semaphore(50)

        async def one(workflow_id: str) -> None:
            async with gate:
                try:
                    await client.get_workflow_handle(workflow_id).terminate("bench_submit done")
                except Exception:  # noqa: BLE001 - never started, or already ended
                    pass

        await asyncio.gather(*(one(i) for i in ids))

    asyncio.run(end())
    return len(ids)


def run(args) -> dict:
    secret = prepare()
    port = free_port()
    dispatcher = None if args.skip_start else start_dispatcher()
    server = start_server(port, args.workers, args.threads)
    auth = {"Authorization": f"Bearer {secret}"}
    endpoints = {"anchor": (ANCHOR_PATH, {}), "amtp": (API_PATH, auth)}
    raw: dict[str, list] = {name: [] for name in endpoints}
    elapsed = dict.fromkeys(endpoints, 0.0)
    try:
        for path, headers in endpoints.values():  # warm-up: connections, imports, caches
            load(port, path, headers, args.clients, args.clients * 2)
        for _ in range(args.rounds):
            for name, (path, headers) in endpoints.items():
                started = time.perf_counter()
                raw[name] += load(port, path, headers, args.clients, args.requests)
                elapsed[name] += time.perf_counter() - started
        left, drain = drained() if dispatcher else (None, None)
    finally:
        server.terminate()
        server.wait(30)
        if dispatcher:
            dispatcher.terminate()
            dispatcher.wait(30)
        terminated = terminate_workflows()
    print(f"{terminated} pending runs' workflows terminated")
    out = {name: figures(raw[name], elapsed[name]) for name in endpoints}
    return {**out, "left": left, "drain": drain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (50)")
    parser.add_argument("--requests", type=int, default=1000, help="per endpoint per round")
    parser.add_argument("--rounds", type=int, default=2, help="anchor, AMTP alternations (2)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn worker")
    parser.add_argument(
        "--skip-start",
        action="store_true",
        help="diagnostic: no dispatcher starts the workflows (what starting them costs)",
    )
    parser.add_argument("--dispatcher", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dispatcher:
        return serve_dispatcher()

    from amtp_site.scratch_stack import use_scratch_stack

    use_scratch_stack(
        database=DB_NAME,
        valkey_db=VALKEY_DB,
        TEMPORAL_TASK_QUEUE=f"bench-submit-{uuid.uuid4().hex[:8]}",  # no worker polls it
    )
    out = run(args)
    print(
        f"POST under {args.clients} concurrent clients, {args.rounds} x {args.requests} requests "
        f"per endpoint; gunicorn gthread {args.workers} workers x {args.threads} threads"
    )
    for name, label in (("anchor", "bare ninja INSERT"), ("amtp", "AMTP POST /api/runs")):
        f = out[name]
        print(
            f"  {label:20} p50 {f['p50']:7.1f} ms  p95 {f['p95']:7.1f} ms  p99 {f['p99']:7.1f} ms"
            f"  {f['per_s']:6.1f} req/s  ok {f['ok']}  other {f['other'] or 'none'}"
        )
    if out["drain"] is not None:
        print(
            f"  workflows: the last started {out['drain']:.1f} s after the last answer"
            f" ({out['left']} still waiting to be started)"
        )
    ratio = out["amtp"]["p99"] / out["anchor"]["p99"]
    name = "submit_p99_without_workflow_start" if args.skip_start else "submit_p99"
    print(f"RATIO {name}: {ratio:.2f}x (goal <= {GOAL}x: AMTP p99 / bare INSERT p99)")
    # The Temporal SDK's runtime threads can abort the interpreter's shutdown
    # (temporalio/sdk-python#300: "PyGILState_Release ... finalizing"): skip it, all is printed.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
