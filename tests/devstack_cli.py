"""`manage.py devstack` as a user runs it, on a folder given per call (tests only)."""

import os
import subprocess
import sys
from pathlib import Path

from amtp_site.devstack import ENV_VARS

ROOT = Path(__file__).resolve().parent.parent


def manage(stack_dir, *args) -> subprocess.CompletedProcess:
    """``manage.py devstack *args`` on ``stack_dir``; the test's own service URLs are not
    passed on (they would make devstack treat the services as external)."""
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS.values()}
    env["AMTP_DEVSTACK_DIR"] = str(stack_dir)
    return subprocess.run(
        [sys.executable, "manage.py", "devstack", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ", 1)[1][0] != "Z"
