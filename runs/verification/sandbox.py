"""The box that code a model wrote (or a repository holds) runs in: bubblewrap namespaces.

One execution = one directory the worker makes (``Box``): ``work/`` is the only writable place
the code sees (``/sandbox`` inside), beside it the proxy's Unix socket and the output file.
Inside: new user, PID, IPC, UTS, cgroup, mount and network namespaces; ``/usr`` and a few
files of ``/etc`` read-only; no project tree, no home, no ``/proc`` of the worker; an empty
environment plus what the tests need; the box dies with the worker. Network: loopback only,
whose one listener pipes to the worker's allow-listing proxy (``proxy.py``).

Limits: a worker running as root starts the box as an unprivileged uid of its own (drawn per
execution), so ``RLIMIT_NPROC`` holds (root ignores it); per process: data memory, processes,
file size, open files and CPU seconds (``prlimit``); per execution: wall time, output bytes and
bytes written under ``work/``, watched every ``POLL_S`` and enforced by killing the box.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path

from django.conf import settings

from runs.verification.errors import SandboxUnavailable

ENTRY = Path(__file__).with_name("box") / "entry.mjs"
VERDICT = ENTRY.with_name("verdict.mjs")  # Playwright's reporter of the verdict (verdict.py)
INSIDE = Path("/sandbox")
INSIDE_RUNNER = "/runner/node_modules"
INSIDE_SOCKET = "/run/amtp/proxy.sock"
INSIDE_ENTRY = "/run/amtp/entry.mjs"
INSIDE_VERDICT = "/run/amtp/verdict.mjs"
BRIDGE_PORT = 3128
UID_RANGE = (400_000, 1_400_000)  # no account uses these: each box is alone under its uid
POLL_S = 0.2
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "fonts",
    "ssl",
    "ca-certificates",
    "alternatives",
    "chromium",
    "chromium.d",
    "localtime",
    "nsswitch.conf",
    "passwd",
    "group",
    "hosts",
    "mime.types",
)
# The system as every box sees it (the availability probe starts the same one): /usr read-only,
# the usual links into it.
SYSTEM = ["--unshare-all", "--ro-bind", "/usr", "/usr"] + [
    arg
    for name in ("lib", "lib64", "bin", "sbin")
    for arg in ("--symlink", f"usr/{name}", f"/{name}")
]
UNAVAILABLE = (
    "the sandbox for generated code cannot start ({why}). Install bubblewrap (`apt-get install "
    "bubblewrap`, or scripts/ensure_packages.sh as root) and allow user namespaces (sysctl user.max_user_namespaces > "
    "0; kernel.unprivileged_userns_clone=1 on older Debian; "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04). AMTP does not run "
    "generated code outside it unless an operator sets AMTP_VERIFY_UNSANDBOXED=true"
)
OUTPUT_CAP = "stopped: the tests printed more than {limit} (the output cap)"
DISK_CAP = "stopped: the tests wrote more than {limit} to their scratch directory (the disk cap)"
WALL_CAP = "stopped: still running after {limit:.0f} s (the wall-time cap)"


@dataclass(frozen=True)
class Limits:
    memory_bytes: int  # per process: RLIMIT_DATA (Chromium reserves far more address space)
    processes: int  # RLIMIT_NPROC of the box's own uid
    file_bytes: int  # RLIMIT_FSIZE: one file, the output file included
    open_files: int
    cpu_s: int  # per process
    output_bytes: int
    disk_bytes: int  # everything under work/

    @classmethod
    def from_settings(cls) -> Limits:
        # Each field is the setting of its name: AMTP_SANDBOX_MEMORY_BYTES, …
        return cls(
            **{f.name: getattr(settings, f"AMTP_SANDBOX_{f.name.upper()}") for f in fields(cls)}
        )


def sandboxed() -> bool:
    """Whether generated code runs in the box (False only by the operator's explicit override)."""
    return not settings.AMTP_VERIFY_UNSANDBOXED


@functools.cache
def _unavailable() -> str:
    if shutil.which("bwrap") is None:
        return "bwrap is not installed"
    probe = subprocess.run(
        ["bwrap", *SYSTEM, "true"],
        capture_output=True,
        text=True,
        timeout=30,
        **_as_own_user(secrets.randbelow(1000)),
    )
    return "" if probe.returncode == 0 else (probe.stderr.strip() or f"exit {probe.returncode}")


def check_available() -> None:
    """SandboxUnavailable, saying what to enable, unless the box can start (or is overridden)."""
    if sandboxed() and (why := _unavailable()):
        raise SandboxUnavailable(UNAVAILABLE.format(why=why))


def _as_own_user(offset: int = 0) -> dict:
    """Popen arguments that drop a root worker to a uid of the box's own."""
    if os.geteuid() != 0:
        return {}
    uid = UID_RANGE[0] + offset
    return {"user": uid, "group": uid, "extra_groups": []}


@dataclass
class Outcome:
    returncode: int
    stopped: str  # why the box was killed ("" when the command ended by itself)


class Box:
    """One execution's directory: ``work/`` (the code's), the proxy socket and the output."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="amtp-box-"))
        self.root.chmod(0o711)  # the box's uid passes through, lists nothing
        self.work = self.root / "work"
        self.work.mkdir(mode=0o700)
        self.socket = self.root / "proxy.sock"
        self.output = self.root / "output.log"
        self.user = _as_own_user(secrets.randbelow(UID_RANGE[1] - UID_RANGE[0]))
        self.entry = self.root / "entry.mjs"
        self.verdict = self.root / "verdict.mjs"
        for source, copy in ((ENTRY, self.entry), (VERDICT, self.verdict)):
            shutil.copyfile(source, copy)
            copy.chmod(0o644)

    @property
    def code_dir(self) -> str:
        """``work/`` as the code sees it."""
        return str(INSIDE) if sandboxed() else str(self.work)

    @property
    def verdict_reporter(self) -> str:
        """The verdict's reporter as the code sees it (read-only, outside ``work/``)."""
        return INSIDE_VERDICT if sandboxed() else str(self.verdict)

    def runner_modules(self, modules: Path) -> str:
        """The runner's ``node_modules`` as the code sees it (mounted read-only in the box)."""
        return INSIDE_RUNNER if sandboxed() else str(modules)

    def outside(self, path: str) -> Path:
        """Where a path the code named (``/sandbox/...`` in the box) lies for the worker."""
        if sandboxed() and Path(path).is_relative_to(INSIDE):
            return self.work / Path(path).relative_to(INSIDE)
        return Path(path)

    def hand_over(self) -> None:
        """Give ``work/`` to the box's uid (after the worker wrote the inputs)."""
        if self.user:
            for path in [self.work, *self.work.rglob("*")]:
                os.lchown(path, self.user["user"], self.user["group"])
        if self.socket.exists():
            self.socket.chmod(0o666)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def run(
        self,
        command: list[str],
        *,
        env: dict,
        runner: Path,
        limits: Limits,
        wall_s: float,
        verdict_fd: int | None = None,
    ):
        """Run ``command`` (paths as the code sees them) in the box; an Outcome. ``verdict_fd``:
        the write end of the verdict's pipe, handed to the command alone (entry.mjs)."""
        if verdict_fd is not None:
            env = {**env, "AMTP_VERDICT_FD": str(verdict_fd)}
        self.hand_over()
        runner_fd = os.open(runner, os.O_PATH | os.O_DIRECTORY)
        try:
            argv = self._argv(command, runner_fd)
            with self.output.open("ab") as out:
                process = subprocess.Popen(
                    ["prlimit", *_rlimits(limits), "--", *argv],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    # bwrap hands its own environment on: not as --setenv arguments, which
                    # every user of the host may read (/proc/<pid>/cmdline; a login password)
                    env=env,
                    cwd=self.work,
                    start_new_session=True,
                    pass_fds=(runner_fd, *([verdict_fd] if verdict_fd is not None else [])),
                    **self.user,
                )
        finally:
            os.close(runner_fd)
            if verdict_fd is not None:  # the box holds it now: its end is the pipe's end
                os.close(verdict_fd)
        return self._watch(process, limits, wall_s)

    def _argv(self, command: list[str], runner_fd: int) -> list[str]:
        if not sandboxed():
            return ["node", str(self.entry), str(self.socket), str(BRIDGE_PORT), *command]
        argv = ["bwrap", *SYSTEM, "--die-with-parent", "--new-session"]
        for name in ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(64 << 20), "--tmpfs", "/tmp"]
        argv += ["--bind", str(self.work), str(INSIDE), "--chdir", str(INSIDE)]
        argv += ["--ro-bind-fd", str(runner_fd), INSIDE_RUNNER]
        argv += ["--ro-bind", str(self.entry), INSIDE_ENTRY]
        argv += ["--ro-bind", str(self.verdict), INSIDE_VERDICT]
        argv += ["--bind", str(self.socket), INSIDE_SOCKET]
        node = _node()
        return [*argv, node, INSIDE_ENTRY, INSIDE_SOCKET, str(BRIDGE_PORT), *command]

    def _watch(self, process: subprocess.Popen, limits: Limits, wall_s: float) -> Outcome:
        started = time.monotonic()
        stopped = ""
        while process.poll() is None:
            elapsed = time.monotonic() - started
            if elapsed > wall_s:
                stopped = WALL_CAP.format(limit=wall_s)
            elif _size(self.output) > limits.output_bytes:
                stopped = OUTPUT_CAP.format(limit=_mib(limits.output_bytes))
            elif _tree_size(self.work) > limits.disk_bytes:
                stopped = DISK_CAP.format(limit=_mib(limits.disk_bytes))
            if stopped:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(POLL_S)  # returns the moment the box ends
        _kill(process)  # whatever it left behind: the PID namespace dies with it
        return Outcome(process.returncode, stopped)

    def output_tail(self, limit: int) -> str:
        """The last ``limit`` bytes of the output, decoded (never the whole file)."""
        with contextlib.suppress(OSError), self.output.open("rb") as out:
            out.seek(max(0, _size(self.output) - limit))
            return out.read(limit).decode("utf-8", "replace")
        return ""


def _node() -> str:
    node = os.path.realpath(shutil.which("node") or "/usr/bin/node")
    if not node.startswith("/usr/"):
        raise SandboxUnavailable(
            UNAVAILABLE.format(why=f"node at {node} is outside /usr, which the box mounts")
        )
    return node


def _rlimits(limits: Limits) -> list[str]:
    return [
        f"--data={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        f"--cpu={limits.cpu_s}",
        "--core=0",
    ]


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _tree_size(root: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.0f} MiB"
