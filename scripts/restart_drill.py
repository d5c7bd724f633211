"""Restart drill: runs in flight while an embedded service is stopped, then started again.

What a new user would try: ``manage.py run_system`` (worker + web + the demo run) on a
devstack of its own, more runs launched with ``manage.py launch_run`` (four in flight, two per
demo repository), one service stopped for ``--outage`` seconds (PostgreSQL's postmaster by
SIGINT, Valkey and Temporal by SIGKILL), ``manage.py devstack up`` again. Every run must pass;
run_system, its worker and its web server must still be the processes started before the
outage, and the web must answer from the database.

    .venv/bin/python scripts/restart_drill.py [--service postgres] [--outage 30]

Everything lives in a temporary folder, removed at the end; dev and test data are untouched.
The bounded versions of this drill are tests/test_service_restarts.py (``make test``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE_URLS = ("DATABASE_URL", "VALKEY_URL", "TEMPORAL_ADDRESS")
STOP_SIGNAL = {"postgres": signal.SIGINT, "valkey": signal.SIGKILL, "temporal": signal.SIGKILL}


def manage(env: dict, *args: str, **kw) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "manage.py", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_statuses(stack: Path) -> dict[str, str]:
    """Straight from PostgreSQL (``runs``), without Django, so a down server reads as {}."""
    import psycopg

    port = json.loads((stack / "state.json").read_text())["postgres"]["port"]
    password = (stack / "postgres.password").read_text().strip()  # devstack up wrote it
    url = f"postgres://postgres:{password}@127.0.0.1:{port}/amtp"
    try:
        with psycopg.connect(url, connect_timeout=3) as c:
            return {str(r): s for r, s in c.execute("SELECT run_id, status FROM runs")}
    except psycopg.OperationalError:
        return {}


def wait(predicate, timeout: float, what: str, every: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := predicate():
            return result
        time.sleep(every)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")


def web_answers(port: int) -> str:
    """An API call that reads the database (the token lookup): 401 when the web works."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/runs", headers={"Authorization": "Bearer not-a-token"}
    )
    try:
        urllib.request.urlopen(request, timeout=10)
    except urllib.error.HTTPError as exc:
        return str(exc.code)
    except OSError as exc:  # not listening (yet)
        return str(exc)
    return "200"


def launch(env: dict, stack: Path, runs: int) -> list[str]:
    """The demo run of run_system plus more at once, two per demo repository at most (their
    concurrency limit)."""
    wait(lambda: len(run_statuses(stack)) >= 1, 120, "the demo run")
    repos = ["demo/mobile" if i % 2 == 0 else "demo/web" for i in range(runs - 1)]
    cmd = [sys.executable, "manage.py", "launch_run", "--depth-level", "core"]
    launched = [
        subprocess.Popen([*cmd, repo], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        for repo in repos
    ]
    for process in launched:
        # Not the exit code: a short-lived Temporal client process may abort while the
        # interpreter finalizes, after its run started (temporalio/sdk-python#300).
        process.wait(120)
    return list(wait(lambda: len(s := run_statuses(stack)) >= runs and s, 30, "the runs"))


def outage(args, env: dict, stack: Path) -> float:
    """Stop the service, wait ``--outage`` seconds, ``devstack up`` it; when it stopped."""
    entry = json.loads((stack / "state.json").read_text())[args.service]
    pid = _postmaster(stack) if args.service == "postgres" else entry["pid"]
    print(f"runs in flight; stopping {args.service} (pid {pid}, port {entry['port']})")
    stopped = time.monotonic()
    os.kill(pid, STOP_SIGNAL[args.service])
    time.sleep(args.outage)
    up = manage(env, "devstack", "up", args.service, timeout=180)
    print(f"devstack up {args.service} after {args.outage:.0f} s: {up.stderr.strip()}")
    return stopped


def finished(stack: Path) -> dict[str, str]:
    statuses = run_statuses(stack)
    return statuses if statuses and not set(statuses.values()) & {"pending", "running"} else {}


def reported(log_path: Path) -> bool:
    """run_system printed the demo run's result (it looks once a second)."""
    deadline = time.monotonic() + 10
    while "demo run passed" not in log_path.read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def drill(args, env: dict, stack: Path, log) -> bool:
    port = free_port()
    cmd = [sys.executable, "manage.py", "run_system", "--port", str(port), "--stop-devstack"]
    system = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait(lambda: web_answers(port) == "401", 180, "run_system's web server", every=2)
        children = sorted(p.pid for p in _children(system.pid))
        launch(env, stack, args.runs)
        wait(lambda: set(run_statuses(stack).values()) == {"running"}, 120, "runs in flight", 0.2)
        stopped = outage(args, env, stack)
        done = wait(lambda: finished(stack), args.timeout, "every run to finish")
        took = time.monotonic() - stopped
        print(f"{len(done)} runs finished {took:.0f} s after the stop: {sorted(done.values())}")
        same = sorted(p.pid for p in _children(system.pid)) == children and system.poll() is None
        print(f"run_system, worker and web are the processes started before: {same}")
        web = web_answers(port)
        print(f"web answers from the database: HTTP {web} (401 expected)")
        demo = reported(Path(log.name))
        print(f"run_system reported the demo run as passed: {demo}")
        return set(done.values()) == {"passed"} and same and web == "401" and demo
    finally:
        system.send_signal(signal.SIGINT)
        try:
            system.wait(60)
        except subprocess.TimeoutExpired:
            system.kill()


def _children(pid: int) -> list:
    import psutil  # pgserver's dependency

    return psutil.Process(pid).children()


def _postmaster(stack: Path) -> int:
    return int((stack / "postgres" / "data" / "postmaster.pid").read_text().splitlines()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--service", choices=list(STOP_SIGNAL), default="postgres")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--outage", type=float, default=30.0, help="seconds the service is down")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds for the runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="amtp-drill-") as tmp:
        stack = Path(tmp) / "stack"
        # The drill's own services only (no external URLs); unbuffered, so run_system's
        # report reaches its log while it runs.
        env = {k: v for k, v in os.environ.items() if k not in SERVICE_URLS}
        env.update(
            AMTP_DEVSTACK_DIR=str(stack),
            AMTP_LOG_LEVEL="WARNING",
            AMTP_ADMIN_PASSWORD="drill",
            PYTHONUNBUFFERED="1",
        )
        up = manage(env, "devstack", "up", timeout=300)
        if up.returncode:
            raise SystemExit(up.stderr)
        with open(Path(tmp) / "run_system.log", "w") as log:
            try:
                ok = drill(args, env, stack, log)
            finally:
                manage(env, "devstack", "down", timeout=120)
        if not ok:
            print((Path(tmp) / "run_system.log").read_text()[-4000:])
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
