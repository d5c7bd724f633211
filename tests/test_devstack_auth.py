"""The embedded PostgreSQL and Valkey refuse clients without the devstack's password (loopback
is shared with every process on the machine, generated test code included), and a devstack an
older version made without passwords is upgraded by ``devstack up``, its data kept."""

import json
import stat
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
import redis

from amtp_site.devstack.postgres import HBA
from amtp_site.devstack.postgres import UPGRADED as PG_UPGRADED
from amtp_site.devstack.valkey import UPGRADED as VALKEY_UPGRADED
from tests.devstack_cli import manage

TRUST_HBA = """\
local   all             all                                     trust
host    all             all             127.0.0.1/32            trust
host    all             all             ::1/128                 trust
"""


def ports(stack: Path) -> dict[str, int]:
    state = json.loads((stack / "state.json").read_text())
    return {name: state[name]["port"] for name in ("postgres", "valkey")}


def password(stack: Path, service: str) -> str:
    return (stack / f"{service}.password").read_text().strip()


def pg(port: int, secret: str | None = None) -> psycopg.Connection:
    return psycopg.connect(
        host="127.0.0.1",
        port=port,
        user="postgres",
        dbname="amtp",
        autocommit=True,
        connect_timeout=5,
        **({"password": secret} if secret is not None else {}),
    )


def kv(port: int, secret: str | None = None) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, password=secret, socket_timeout=5)


@pytest.fixture
def stack():
    """A devstack folder outside pytest's tmp_path: another pytest session starting on the
    machine resets /tmp/pytest-of-<user> to 0700, which locks out PostgreSQL's own user."""
    with tempfile.TemporaryDirectory(prefix="amtp-devstack-auth-") as folder:
        folder = Path(folder)
        up = manage(folder, "up", "postgres", "valkey")
        assert up.returncode == 0, up.stderr
        try:
            yield folder
        finally:
            manage(folder, "down", "postgres", "valkey")


def test_both_servers_refuse_a_client_without_the_password(stack):
    port = ports(stack)
    for service in ("postgres", "valkey"):
        mode = (stack / f"{service}.password").stat().st_mode
        assert stat.S_IMODE(mode) == 0o600, service
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        pg(port["postgres"])
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        pg(port["postgres"], "guessed")
    with pg(port["postgres"], password(stack, "postgres")) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with pytest.raises(redis.AuthenticationError):
        kv(port["valkey"]).ping()
    with pytest.raises(redis.AuthenticationError):
        kv(port["valkey"], "guessed").ping()
    assert kv(port["valkey"], password(stack, "valkey")).ping()
    # Not on a command line, which every user of the machine can read in /proc.
    state = json.loads((stack / "state.json").read_text())
    cmdline = Path(f"/proc/{state['valkey']['pid']}/cmdline").read_bytes()
    assert password(stack, "valkey").encode() not in cmdline
    status = manage(stack, "status").stdout
    assert f"postgres://postgres:***@127.0.0.1:{port['postgres']}/amtp" in status
    assert password(stack, "postgres") not in status and password(stack, "valkey") not in status


def downgrade(stack: Path, port: dict[str, int]) -> None:
    """Make the running stack what an older version left: trust, no password, no files."""
    with pg(port["postgres"], password(stack, "postgres")) as conn:
        conn.execute("ALTER ROLE postgres PASSWORD NULL")
        conn.execute("CREATE TABLE IF NOT EXISTS kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('from the old version')")
        loaded = conn.execute("SELECT pg_conf_load_time()").fetchone()[0]
        (stack / "postgres" / "data" / "pg_hba.conf").write_text(TRUST_HBA)
        conn.execute("SELECT pg_reload_conf()")
        while conn.execute("SELECT pg_conf_load_time()").fetchone()[0] == loaded:
            time.sleep(0.05)
    kv(port["valkey"], password(stack, "valkey")).config_set("requirepass", "")
    for leftover in ("postgres.password", "valkey.password", "valkey/valkey.conf"):
        (stack / leftover).unlink()
    with pg(port["postgres"]) as conn:  # the old trust: no password needed
        assert conn.execute("SELECT count(*) FROM kept").fetchone() == (1,)
    assert kv(port["valkey"]).ping()


def upgraded(stack: Path, port: dict[str, int]) -> None:
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        pg(port["postgres"])
    with pg(port["postgres"], password(stack, "postgres")) as conn:
        assert conn.execute("SELECT note FROM kept").fetchall() == [("from the old version",)]
    assert (stack / "postgres" / "data" / "pg_hba.conf").read_text() == HBA
    with pytest.raises(redis.AuthenticationError):
        kv(port["valkey"]).ping()
    assert kv(port["valkey"], password(stack, "valkey")).ping()


def test_up_upgrades_a_running_trust_devstack_and_keeps_its_data(stack):
    port = ports(stack)
    downgrade(stack, port)
    up = manage(stack, "up", "postgres", "valkey")
    assert up.returncode == 0, up.stderr
    said = up.stderr.replace("\n", " ")
    assert PG_UPGRADED.format(file=stack / "postgres.password") in said
    assert VALKEY_UPGRADED.format(file=stack / "valkey.password") in said
    assert ports(stack) == port
    upgraded(stack, port)
    again = manage(stack, "up", "postgres", "valkey")  # nothing left to upgrade
    assert again.returncode == 0 and "upgraded" not in again.stderr


def test_up_upgrades_a_stopped_trust_devstack(stack):
    """The usual case after a pull: the old stack was stopped, `make run` starts it."""
    port = ports(stack)
    downgrade(stack, port)
    assert manage(stack, "down", "postgres", "valkey").returncode == 0
    up = manage(stack, "up", "postgres", "valkey")
    assert up.returncode == 0, up.stderr
    assert PG_UPGRADED.format(file=stack / "postgres.password") in up.stderr.replace("\n", " ")
    upgraded(stack, ports(stack))


def test_up_stops_with_what_to_do_when_a_password_file_was_lost(stack):
    """A new password would not open the existing data: say so, and keep the servers."""
    port = ports(stack)
    for service in ("postgres", "valkey"):
        kept = password(stack, service)
        (stack / f"{service}.password").unlink()
        up = manage(stack, "up", service)
        assert up.returncode != 0
        said = up.stderr.replace("\n", " ")
        if service == "postgres":
            data = stack / "postgres" / "data"
            assert f"the password in {stack / 'postgres.password'} is not the one" in said
            assert f"remove {data} to start with an empty database" in said
        else:
            assert f"does not take the password in {stack / 'valkey.password'}" in said
        (stack / f"{service}.password").write_text(kept + "\n")
        assert manage(stack, "up", service).returncode == 0
    assert ports(stack) == port
