"""Worker and pool processes are not dumpable: a process of the same user cannot read their
environment (where the keys live) through /proc."""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

UID = 300_123  # as root, both sides run as this uid; otherwise as ours
PR_GET_DUMPABLE = 3
PROJECT = Path(__file__).resolve().parent.parent
# The system interpreter: the other uid may not read a virtualenv under a private home.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def as_user() -> dict:
    return {"user": UID, "group": UID, "extra_groups": []} if os.geteuid() == 0 else {}


def holder(undumpable: bool) -> subprocess.Popen:
    code = "from amtp_site.child import undumpable; undumpable()\n" if undumpable else ""
    child = subprocess.Popen(
        [PYTHON, "-c", code + "import time; print('up', flush=True); time.sleep(30)"],
        env={"PYTHONPATH": str(PROJECT), "AMTP_HELD_KEY": "held-canary-3141"},
        stdout=subprocess.PIPE,
        text=True,
        **as_user(),
    )
    assert child.stdout.readline().strip() == "up"
    return child


def read_environ_as_same_user(pid: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["cat", f"/proc/{pid}/environ"], capture_output=True, text=True, **as_user()
    )


@pytest.mark.parametrize("undumpable", [False, True])
def test_a_same_user_process_reads_the_environ_only_of_a_dumpable_process(undumpable):
    child = holder(undumpable)
    try:
        seen = read_environ_as_same_user(child.pid)
        if undumpable:
            assert seen.returncode != 0 and "Permission denied" in seen.stderr
        else:
            assert "held-canary-3141" in seen.stdout  # the threat, shown to be real
    finally:
        child.kill()
        child.wait()


def test_the_worker_command_and_every_pool_process_make_themselves_undumpable():
    from amtp_site import child
    from runs.management.commands import run_worker

    assert run_worker.undumpable is child.undumpable  # run_worker's handle calls it first
    child.django_setup()  # every agent and pool process starts with it
    libc = ctypes.CDLL(None)
    assert libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
