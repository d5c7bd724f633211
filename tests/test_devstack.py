"""`manage.py devstack up|status|down` on a folder of its own: idempotent, no orphans, and a
stopped service comes back on the port its clients know."""

import json
import os
import signal
import socket
import time

import psycopg
import pytest
import redis

from amtp_site.devstack.base import PORT_MOVED, RESTARTED, port_free
from tests.devstack_cli import alive, manage


def test_up_is_idempotent_restarts_on_the_recorded_ports_down_leaves_nothing(tmp_path):
    stack = tmp_path / "stack"
    first = manage(stack, "up")
    assert first.returncode == 0, first.stderr
    state = json.loads((stack / "state.json").read_text())
    pids = {name: state[name]["pid"] for name in ("postgres", "valkey", "temporal")}
    try:
        assert all(alive(pid) for pid in pids.values())
        second = manage(stack, "up")  # idempotent: same processes, same ports
        assert second.returncode == 0, second.stderr
        again = json.loads((stack / "state.json").read_text())
        assert {n: again[n]["pid"] for n in pids} == pids
        assert {n: again[n]["port"] for n in pids} == {n: state[n]["port"] for n in pids}
        status = manage(stack, "status").stdout
        for name in pids:
            assert f"127.0.0.1:{state[name]['port']}" in status
        assert status.count("running") == 3
        stop_with_clients_connected(stack, state)
        third = manage(stack, "up")
        assert third.returncode == 0, third.stderr
        restarted = json.loads((stack / "state.json").read_text())
        assert {n: restarted[n]["port"] for n in pids} == {n: state[n]["port"] for n in pids}
        for name in pids:
            assert RESTARTED.format(service=name, port=state[name]["port"]) in third.stderr
        assert manage(stack, "status").stdout.count("running") == 3
        pids = {name: restarted[name]["pid"] for name in pids}
    finally:
        down = manage(stack, "down")
    assert down.returncode == 0, down.stderr
    assert not any(alive(pid) for pid in pids.values())
    assert manage(stack, "status").stdout.count("stopped") == 3


def password(stack, service: str) -> str:
    return (stack / f"{service}.password").read_text().strip()


def stop_with_clients_connected(stack, state):
    """Stop each server the way a crash or an operator would while clients are connected, so
    the old connections linger (TIME_WAIT, FIN_WAIT) on the ports when it starts again."""
    port = {name: state[name]["port"] for name in ("postgres", "valkey", "temporal")}
    pg = psycopg.connect(
        f"postgres://postgres:{password(stack, 'postgres')}@127.0.0.1:{port['postgres']}/amtp"
    )
    pg.execute("SELECT 1")
    kv = redis.Redis(port=port["valkey"], password=password(stack, "valkey"))
    kv.ping()
    grpc = socket.create_connection(("127.0.0.1", port["temporal"]))
    os.kill(state["postgres"]["pid"], signal.SIGINT)  # fast shutdown of the postmaster
    os.kill(state["valkey"]["pid"], signal.SIGKILL)
    os.kill(state["temporal"]["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(alive(state[n]["pid"]) for n in port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(state[n]["pid"]) for n in port)
    pg.close(), kv.close(), grpc.close()


def test_a_port_whose_old_connections_linger_in_time_wait_is_free_for_a_server():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    server.accept()[0].close()  # the server goes first, as a stopped server does
    server.close()
    time.sleep(0.1)
    client.close()  # the server's side of the connection is now in TIME_WAIT
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # why a plain probe moved restarted services
    assert port_free(port)
    with socket.socket() as taken:  # another server took it
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen()
        assert not port_free(port)


def test_a_port_taken_by_another_process_moves_the_service_and_says_so(tmp_path):
    stack = tmp_path / "stack"
    assert manage(stack, "up", "valkey").returncode == 0
    old = json.loads((stack / "state.json").read_text())["valkey"]["port"]
    manage(stack, "down", "valkey")
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", old))
    squatter.listen()
    try:
        result = manage(stack, "up", "valkey")
        new = json.loads((stack / "state.json").read_text())["valkey"]["port"]
    finally:
        squatter.close()
        manage(stack, "down", "valkey")
    assert result.returncode == 0, result.stderr
    assert new != old
    moved = PORT_MOVED.format(service="valkey", old=old, new=new, state_file=stack / "state.json")
    assert moved in result.stderr.replace("\n", " ")


def test_unknown_service_is_refused(tmp_path):
    result = manage(tmp_path, "up", "mysql")
    assert result.returncode != 0 and "unknown service" in result.stderr
