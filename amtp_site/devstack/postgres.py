"""The embedded PostgreSQL, from pgserver's binaries.

Every connection proves a password (``scram-sha-256``): loopback is shared with every process
on the machine, generated test code included. The password is generated into
``<devstack>/postgres.password`` (0600) and is part of the URL settings build. A data folder
an older version created with ``trust`` is upgraded by the next ``up``.
"""

from __future__ import annotations

import os
import subprocess
import time
import warnings

from amtp_site.devstack.base import (
    STACK_DIR,
    DevstackError,
    Say,
    choose_port,
    ensure_password,
    log_tail,
    password_file,
    pid_alive,
    port_open,
    read_password,
    stop_pid,
    wait_for_port,
)

DATABASE_NAME = "amtp"
DATA = STACK_DIR / "postgres" / "data"
LOG = STACK_DIR / "postgres" / "postgres.log"
# The server listens on 127.0.0.1 only and has no Unix socket; the `local` line is there in
# case one is ever enabled.
HBA = """\
# Written by `manage.py devstack up`: every connection proves the password (SCRAM).
local   all             all                                     scram-sha-256
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
host    replication     all             127.0.0.1/32            scram-sha-256
"""
UPGRADED = (
    "postgres: upgraded from trust to password (scram-sha-256) authentication; the password "
    "is in {file}. Processes started before (run_worker, runserver, run_system) must be "
    "restarted: they connect without it"
)
WRONG_PASSWORD = (
    "postgres: the password in {file} is not the one of the data folder {data} ({error}). "
    "Restore that file, or remove {data} to start with an empty database"
)


def _pgserver():
    with warnings.catch_warnings():  # pgserver's import warns about XDG_RUNTIME_DIR; harmless
        warnings.simplefilter("ignore")
        from pgserver import _commands, utils
    return _commands.POSTGRES_BIN_PATH, utils


def pg_bin(name: str) -> str:
    return str(_pgserver()[0] / name)


def pg_user() -> str | None:
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


def _prepare(user: str | None, password: str) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    if user:
        import pwd

        _pgserver()[1].ensure_prefix_permissions(DATA)
        pw = pwd.getpwnam(user)
        for path in (DATA.parent, DATA):
            os.chown(path, pw.pw_uid, pw.pw_gid)
    DATA.chmod(0o700)
    if not (DATA / "PG_VERSION").exists():
        _initdb(user, password)


def _initdb(user: str | None, password: str) -> None:
    """A new cluster with password authentication from its first start (initdb reads the
    password from a file the server's user can read, removed right after)."""
    pwfile = DATA.parent / ".initdb-password"
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(password + "\n")
    if user:
        import pwd

        os.chown(pwfile, pwd.getpwnam(user).pw_uid, -1)
    initdb = [pg_bin("initdb"), "-D", str(DATA), "--auth=scram-sha-256", "-U", "postgres"]
    try:
        _run_pg([*initdb, f"--pwfile={pwfile}", "-E", "UTF8", "--no-instructions"], user)
    finally:
        pwfile.unlink(missing_ok=True)


def start(state: dict, say: Say) -> dict:
    entry = state.get("postgres", {})
    password = ensure_password("postgres")
    if pid_alive(pid()) and entry.get("port") and port_open(entry["port"]):
        _secure(entry["port"], password, say)
        return entry
    user = pg_user()
    _prepare(user, password)
    port = choose_port("postgres", entry.get("port"), say)
    # -k '' disables the Unix socket (long project paths break its 107-byte limit).
    opts = f"-h 127.0.0.1 -p {port} -k '' -c fsync=off -c full_page_writes=off"
    pg_ctl = [pg_bin("pg_ctl"), "-D", str(DATA), "-l", str(LOG), "-o", opts]
    _run_pg([*pg_ctl, "-w", "-t", "60", "start"], user)
    wait_for_port("postgres", port, LOG)
    _secure(port, password, say)
    _create_database(port, password)
    return {"port": port, "pid": pid(), "log": str(LOG)}


def _connect(port: int, password: str, database: str = "postgres"):
    import psycopg

    try:
        return psycopg.connect(
            host="127.0.0.1",
            port=port,
            user="postgres",
            password=password,
            dbname=database,
            autocommit=True,
            connect_timeout=10,
        )
    except psycopg.OperationalError as exc:
        if "password authentication failed" not in str(exc):
            raise DevstackError(f"postgres: cannot connect: {exc}") from exc
        file = password_file("postgres")
        raise DevstackError(WRONG_PASSWORD.format(file=file, data=DATA, error=exc)) from exc


def _secure(port: int, password: str, say: Say) -> None:
    """Password authentication only. A cluster an older version made with ``trust`` lets us
    in without the password: set it, rewrite pg_hba.conf, reload, and wait until the server
    answers by the new rules."""
    hba = DATA / "pg_hba.conf"
    before = hba.read_text()
    from psycopg import sql

    with _connect(port, password) as conn:  # the password works, whatever else is to do
        if before == HBA:
            return
        conn.execute(sql.SQL("ALTER ROLE postgres PASSWORD {}").format(sql.Literal(password)))
        loaded = conn.execute("SELECT pg_conf_load_time()").fetchone()[0]
        hba.write_text(HBA)  # the file keeps its owner and mode
        conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 10
        while conn.execute("SELECT pg_conf_load_time()").fetchone()[0] == loaded:
            if time.monotonic() > deadline:
                raise DevstackError(f"postgres did not reload {hba}; see {LOG}")
            time.sleep(0.05)
    rules = [line.split() for line in before.splitlines() if not line.lstrip().startswith("#")]
    if any(rule[-1:] == ["trust"] for rule in rules):
        say(UPGRADED.format(file=password_file("postgres")))


def _create_database(port: int, password: str) -> None:
    import psycopg
    from psycopg import sql

    with _connect(port, password) as conn:
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME)))
        except psycopg.errors.DuplicateDatabase:
            pass


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
        [pg_bin("pg_ctl"), "-D", str(DATA), "-m", "fast", "-w", "stop"],
        capture_output=True,
        user=pg_user(),
        cwd="/",
        timeout=60,
    )
    stop_pid(postmaster)


def url(entry: dict) -> str:
    password = read_password("postgres")
    user = f"postgres:{password}" if password else "postgres"  # none yet: an older devstack
    return f"postgres://{user}@127.0.0.1:{entry['port']}/{DATABASE_NAME}"
