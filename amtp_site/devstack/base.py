"""What the embedded services share: their folder and ``state.json``, ports and processes.

Imported by settings (through ``amtp_site.devstack``): it must not import Django.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
STACK_DIR = Path(os.environ.get("AMTP_DEVSTACK_DIR", BASE_DIR / ".devstack")).resolve()
STATE_FILE = STACK_DIR / "state.json"
START_TIMEOUT = 60.0

Say = Callable[[str], None]

PORT_MOVED = (
    "{service}: port {old}, recorded in {state_file}, is taken by another process "
    "(`ss -ltnp 'sport = :{old}'` names it), so {service} now listens on port {new}. "
    "Processes that read the old address when they started (run_worker, runserver, "
    "run_system) must be restarted."
)
UI_PORT_MOVED = "{service}: port {old} is taken by another process; the web UI is on {new}"
RESTARTED = "{service} was not running: started again on its recorded port {port}"


class DevstackError(RuntimeError):
    """A service did not start; the message carries the tail of its log."""


def read_state() -> dict:
    try:
        return json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return {}


def write_state(state: dict) -> None:
    STACK_DIR.mkdir(parents=True, exist_ok=True)
    tmp = STATE_FILE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(STATE_FILE)


# --- passwords ---------------------------------------------------------------------------


def password_file(service: str) -> Path:
    return STACK_DIR / f"{service}.password"


def read_password(service: str) -> str:
    """The password ``up`` generated for ``service`` ("" before it did: an older devstack,
    upgraded by the next ``up``)."""
    try:
        return password_file(service).read_text().strip()
    except OSError:
        return ""


def ensure_password(service: str) -> str:
    """``service``'s password, generated on first use into a file only its owner may read
    (0600): other users of the machine, and generated test code, must not connect."""
    if found := read_password(service):
        return found
    STACK_DIR.mkdir(parents=True, exist_ok=True)
    path = password_file(service)
    value = secrets.token_urlsafe(32)  # URL-safe: goes into DATABASE_URL / VALKEY_URL as is
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    path.chmod(0o600)
    return value


# --- ports -------------------------------------------------------------------------------


def port_open(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def port_free(port: int) -> bool:
    """A server could listen on ``port`` now. Probed with SO_REUSEADDR, as PostgreSQL, Valkey
    and Temporal bind: the connections of a stopped server linger in TIME_WAIT for a minute,
    which would refuse a plain bind but do not stop the server from listening again."""
    if port_open(port):
        return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_range() -> range:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def _any_free_port() -> int:
    """A free port below the kernel's ephemeral range. Temporal's dev server binds port 0
    for its internal services after we chose its ports; a port we took from that range
    (by binding 0 and closing) could be handed to one of them first, and the web UI then
    fails with "address already in use"."""
    ephemeral = _ephemeral_range()
    candidates = [p for p in range(10000, 32768) if p not in ephemeral] or list(ephemeral)
    for port in random.sample(candidates, 200):
        if port_free(port):
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def choose_port(service: str, recorded: int | None, say: Say, *, ui: bool = False) -> int:
    """The port recorded for ``service`` when it is free, so clients that read the address
    before the restart find the service again; otherwise a free port, and ``say`` why."""
    if recorded and port_free(recorded):
        return recorded
    port = _any_free_port()
    if recorded:
        message = UI_PORT_MOVED if ui else PORT_MOVED
        say(message.format(service=service, old=recorded, new=port, state_file=STATE_FILE))
    return port


# --- processes ---------------------------------------------------------------------------


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log written)"


def wait_for_port(name: str, port: int, log: Path, pid_alive=lambda: True) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if not pid_alive():
            break
        time.sleep(0.2)
    raise DevstackError(
        f"{name} did not start on 127.0.0.1:{port}. Log tail ({log}):\n{log_tail(log)}"
    )


def stop_pid(pid: int | None, timeout: float = 20.0) -> None:
    if not pid_alive(pid):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def spawn(cmd: list[str], log: Path, **kwargs) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        # start_new_session: the server outlives this command and is stopped as a group.
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **kwargs,
        )
