"""One control group per box: a memory limit over every process of the box and every tmpfs page
it writes, a process limit, and a way to kill the whole box at once.

cgroup v2 where the host mounts it with the memory and pids controllers; otherwise cgroup v1
(separate ``memory`` and ``pids`` hierarchies, as on hosts still booted without the unified
hierarchy). Every box's groups live under ``AMTP_SANDBOX_CGROUP_PARENT`` of each hierarchy's
root. Kernel documentation: https://docs.kernel.org/admin-guide/cgroup-v2.html and
https://docs.kernel.org/admin-guide/cgroup-v1/memory.html, …/cgroup-v1/pids.html.

The box joins its groups before it starts (``enter_argv``): a shell, still root, writes its own
pid into each ``cgroup.procs`` and only then becomes the box's uid, so no process of the box is
ever outside them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


class CgroupUnavailable(Exception):
    pass


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _field(text: str, key: str) -> int:
    """The number after ``key`` in a flat-keyed file (memory.events, pids.events, oom_control)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _v2() -> bool:
    return {"memory", "pids"} <= set(_read(ROOT / "cgroup.controllers").split())


class Cgroup:
    """The box's group(s): made with their limits, removed (after a kill) by ``remove``."""

    def __init__(self, name: str, parent: str, memory_bytes: int, processes: int) -> None:
        self.v2 = _v2()
        self.dirs: list[Path] = []
        try:
            if self.v2:
                base = ROOT / parent
                base.mkdir(exist_ok=True)
                # the parent hands both controllers down to the boxes' groups
                (base / "cgroup.subtree_control").write_text("+memory +pids")
                self.memory = self.pids = self._make(base / name)
                (self.memory / "memory.max").write_text(str(memory_bytes))
                (self.memory / "memory.swap.max").write_text("0")
                (self.memory / "memory.oom.group").write_text("1")  # OOM kills the whole box
            else:
                self.memory = self._make(ROOT / "memory" / parent / name)
                self.pids = self._make(ROOT / "pids" / parent / name)
                (self.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):  # only with swap accounting
                    (self.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (self.pids / "pids.max").write_text(str(processes))
        except OSError as exc:
            self.remove()
            raise CgroupUnavailable(f"{exc.filename or ROOT}: {exc.strerror or exc}") from None

    def _make(self, path: Path) -> Path:
        path.parent.mkdir(exist_ok=True)
        path.mkdir()
        self.dirs.append(path)
        return path

    def enter_argv(self) -> list[str]:
        """A prefix that runs the rest of the argv inside the groups (with ``sh``)."""
        procs = " ".join(f"{d}/cgroup.procs" for d in self.dirs)
        return [
            "/bin/sh",
            "-c",
            f'for f in {procs}; do echo $$ > "$f" || exit 125; done; exec "$@"',
            "sh",
        ]

    def memory_hit(self) -> bool:
        """Whether the kernel had to kill a process of the box for memory."""
        if self.v2:
            return _field(_read(self.memory / "memory.events"), "oom_kill") > 0
        return _field(_read(self.memory / "memory.oom_control"), "oom_kill") > 0

    def pids_hit(self) -> bool:
        """Whether the box tried to run more processes (threads count) than allowed."""
        return _field(_read(self.pids / "pids.events"), "max") > 0

    def peak_memory(self) -> int:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        return int(_read(self.memory / name).strip() or 0)

    def kill(self) -> None:
        """SIGKILL every process in the groups until none is left (they cannot escape them)."""
        kill(self.dirs)

    def remove(self) -> None:
        remove(self.dirs)
        self.dirs = []


def kill(dirs: list[Path]) -> None:
    """SIGKILL every process in the groups ``dirs`` until none is left."""
    for d in dirs:
        if (d / "cgroup.kill").exists():  # v2: the kernel kills the whole group at once
            with contextlib.suppress(OSError):
                (d / "cgroup.kill").write_text("1")
    for _ in range(100):
        pids = {int(p) for d in dirs for p in _read(d / "cgroup.procs").split()}
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def remove(dirs: list[Path]) -> None:
    """Kill what is left in the groups ``dirs`` and remove them, innermost last given first."""
    kill(dirs)
    for path in reversed(dirs):
        for _ in range(50):  # a killed process leaves its group a moment later
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
