"""``make run``'s port and its exit code: a busy port is refused before anything starts, with
a message naming it and how to choose another; a part of the system that dies ends the whole
with a non-zero exit."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from amtp_site.ports import port_problem

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def busy_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def _run(args, **env):
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_port_check_names_the_port_and_the_way_out(busy_port):
    problem = port_problem(busy_port)
    assert f"port {busy_port} on 127.0.0.1 is already in use" in problem
    assert f"PORT={busy_port + 1} make run" in problem
    assert port_problem(0) and port_problem(70000) and port_problem("80")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert port_problem(port) is None


def test_make_runs_first_step_fails_on_a_busy_port(busy_port):
    done = _run(["scripts/port_free.py", str(busy_port)])
    assert done.returncode == 1
    assert done.stderr.startswith(f"make run: port {busy_port} on 127.0.0.1 is already in use")
    assert _run(["scripts/port_free.py", "http"]).returncode == 1


@pytest.mark.django_db(transaction=True)
def test_run_system_refuses_a_busy_port_before_starting_anything(busy_port):
    done = _run(["manage.py", "run_system", "--port", str(busy_port), "--no-demo-run"])
    assert done.returncode == 1
    assert f"port {busy_port} on 127.0.0.1 is already in use" in done.stderr
    assert "AMTP is up" not in done.stdout and "worker" not in done.stdout


@pytest.mark.django_db(transaction=True)
def test_a_dead_worker_ends_run_system_with_a_non_zero_exit():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    # A worker that cannot reach Temporal exits at once; run_system must not exit 0.
    done = _run(
        ["manage.py", "run_system", "--port", str(port), "--no-demo-run"],
        TEMPORAL_ADDRESS="127.0.0.1:1",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "AMTP is up" in done.stdout
    # The worker's own exit: 1 from its error, or rarely a signal while the Temporal SDK's
    # threads wind down; either way run_system says which and stops.
    said = re.search(r"worker exited with code (-?\d+); stopping", done.stderr)
    assert said and said.group(1) != "0", done.stderr
    assert done.stderr.rstrip().endswith(f"CommandError: worker exited with code {said.group(1)}")
