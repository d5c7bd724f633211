"""`manage.py devstack up|status|down` on a folder of its own: idempotent, no orphans."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(stack_dir, *args):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "VALKEY_URL", "TEMPORAL_ADDRESS")
    }
    env["AMTP_DEVSTACK_DIR"] = str(stack_dir)
    return subprocess.run(
        [sys.executable, "manage.py", "devstack", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ", 1)[1][0] != "Z"


def test_up_twice_status_down_leaves_no_processes(tmp_path):
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
    finally:
        down = manage(stack, "down")
    assert down.returncode == 0, down.stderr
    assert not any(alive(pid) for pid in pids.values())
    assert manage(stack, "status").stdout.count("stopped") == 3


def test_unknown_service_is_refused(tmp_path):
    result = manage(tmp_path, "up", "mysql")
    assert result.returncode != 0 and "unknown service" in result.stderr
