"""The embedded PostgreSQL, from pgserver's binaries."""

from __future__ import annotations

import os
import subprocess
import warnings

from amtp_site.devstack.base import (
    STACK_DIR,
    DevstackError,
    Say,
    choose_port,
    log_tail,
    pid_alive,
    port_open,
    stop_pid,
    wait_for_port,
)

DATABASE_NAME = "amtp"
DATA = STACK_DIR / "postgres" / "data"
LOG = STACK_DIR / "postgres" / "postgres.log"


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


def pid() -> int | None:
    """The postmaster's pid, from its lock file."""
    try:
        return int((DATA / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _prepare(user: str | None) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    if user:
        import pwd

        _pgserver()[1].ensure_prefix_permissions(DATA)
        pw = pwd.getpwnam(user)
        for path in (DATA.parent, DATA):
            os.chown(path, pw.pw_uid, pw.pw_gid)
    DATA.chmod(0o700)
    if not (DATA / "PG_VERSION").exists():
        initdb = [_pg_bin("initdb"), "-D", str(DATA), "--auth=trust", "-U", "postgres"]
        _run_pg([*initdb, "-E", "UTF8", "--no-instructions"], user)


def start(state: dict, say: Say) -> dict:
    entry = state.get("postgres", {})
    if pid_alive(pid()) and entry.get("port") and port_open(entry["port"]):
        return entry
    user = _pg_user()
    _prepare(user)
    port = choose_port("postgres", entry.get("port"), say)
    # -k '' disables the Unix socket (long project paths break its 107-byte limit).
    opts = f"-h 127.0.0.1 -p {port} -k '' -c fsync=off -c full_page_writes=off"
    pg_ctl = [_pg_bin("pg_ctl"), "-D", str(DATA), "-l", str(LOG), "-o", opts]
    _run_pg([*pg_ctl, "-w", "-t", "60", "start"], user)
    wait_for_port("postgres", port, LOG)
    _run_pg(
        [_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", DATABASE_NAME],
        user,
        ok_if="already exists",
    )
    return {"port": port, "pid": pid(), "log": str(LOG)}


def _run_pg(cmd: list[str], user: str | None, ok_if: str = "") -> None:
    LOG.parent.mkdir(parents=True, exist_ok=True)
    if user and not LOG.exists():
        LOG.touch()
        import pwd

        pw = pwd.getpwnam(user)
        os.chown(LOG, pw.pw_uid, pw.pw_gid)
    result = subprocess.run(cmd, capture_output=True, text=True, user=user, cwd="/", timeout=120)
    if result.returncode != 0 and not (ok_if and ok_if in result.stderr):
        raise DevstackError(
            f"postgres: {' '.join(cmd[:1])} failed: {result.stderr.strip()}\n"
            f"Log tail ({LOG}):\n{log_tail(LOG)}"
        )


def stop(state: dict) -> None:
    postmaster = pid()
    if not pid_alive(postmaster):
        return
    subprocess.run(
        [_pg_bin("pg_ctl"), "-D", str(DATA), "-m", "fast", "-w", "stop"],
        capture_output=True,
        user=_pg_user(),
        cwd="/",
        timeout=60,
    )
    stop_pid(postmaster)


def url(entry: dict) -> str:
    return f"postgres://postgres@127.0.0.1:{entry['port']}/{DATABASE_NAME}"
