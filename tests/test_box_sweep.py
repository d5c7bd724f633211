"""A worker killed with SIGKILL never removes its boxes (their processes die with it; their
folders, tmpfs mounts and cgroups stay): the next worker to start sweeps them, and only them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from verification import sandbox
from verification.boot.app import AppBox

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap is a requirement of the worker"
)


def test_the_boxes_of_a_process_that_is_gone_are_swept_and_a_live_ones_kept():
    maker = subprocess.Popen(["sleep", "60"])
    made_by_it = sandbox.process_id(maker.pid)
    maker.kill()
    maker.wait()  # gone: as a worker killed with SIGKILL
    live, orphan = AppBox(), AppBox()
    try:
        limits = sandbox.Limits.from_settings()
        env = {"PATH": "/usr/bin:/bin"}
        process = orphan.start(
            ["-", "0", "sleep", "60"], env=env, runner=orphan.nothing, limits=limits
        )
        sandbox.stop(process)  # its processes died with the worker; nothing else was undone
        groups = [Path(g) for g in (orphan.root / sandbox.CGROUPS).read_text().split()]
        assert groups and all(g.is_dir() for g in groups)
        (orphan.root / sandbox.OWNER).write_text(made_by_it)
        swept = sandbox.sweep()
        assert orphan.root in swept and live.root not in swept
        assert not orphan.root.exists() and not any(g.exists() for g in groups)
        assert live.root.is_dir() and (live.fs / "work").is_dir()
        assert str(orphan.fs) not in Path("/proc/self/mounts").read_text()
    finally:
        orphan.cgroup = None  # swept already
        live.remove()
        orphan.remove()
