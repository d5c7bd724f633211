"""The box that code a model wrote (or a repository holds) runs in: bubblewrap namespaces.

One execution = one directory the worker makes (``Box``): ``fs/`` is a tmpfs of a fixed size
and number of inodes holding all the box may write: ``work/`` (``/sandbox`` inside), ``tmp/``
(``/tmp``) and ``shm/`` (``/dev/shm``); beside it the proxy's Unix socket, in a folder only the
box's uid may enter, and the output file. Inside: new user, PID, IPC, UTS, cgroup, mount and
network namespaces, no nested user namespace, a seccomp filter (``seccomp.py``); ``/usr`` and a
few files of ``/etc`` read-only; no project tree, no home, no ``/proc`` of the worker; an empty
environment plus what the tests need; the box dies with the worker. Network: loopback only,
whose one listener pipes to the worker's allow-listing proxy (``proxy.py``). Playwright's runner
runs from an execute-only copy of node (``sealed_node``), so no process of the box can reach
its descriptors (the verdict's pipe, ``verdict.py``) through ``/proc``.

Limits (docs/security.md): the worker runs as root, mounts the tmpfs and starts the box as an
unprivileged uid of its own (drawn per execution), so ``RLIMIT_NPROC`` holds; per box: one
cgroup (``cgroup.py``) bounding the memory of every process and every tmpfs page it writes,
and its processes; per process: data memory, processes, file size, open files and CPU seconds
(``prlimit``); per execution: wall time and output bytes. They are watched every ``POLL_S``;
a box over its memory or process cap, or with its tmpfs full, is killed as a whole and the
reason reported.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from amtp_site.setting_fields import from_settings
from verification import cgroup, seccomp
from verification.cgroup import Cgroup, CgroupUnavailable
from verification.errors import SandboxUnavailable

ENTRY = Path(__file__).with_name("box") / "entry.mjs"
RUNNER = ENTRY.with_name("runner.mjs")  # Playwright's runner, the verdict's one holder
INSIDE = Path("/sandbox")
INSIDE_RUNNER = "/runner/node_modules"
INSIDE_PROXY = "/run/amtp/proxy"  # the socket's folder, bound by file descriptor
INSIDE_ENTRY = "/run/amtp/entry.mjs"
INSIDE_RUNNER_SCRIPT = "/run/amtp/runner.mjs"
INSIDE_SEALED_NODE = "/run/amtp/node"  # execute-only: what runs from it is non-dumpable
BRIDGE_PORT = 3128
PREFIX = "amtp-box-"  # each box's folder, in the temporary directory
OWNER = "owner"  # in a box's folder: the pid and start time of the process that made it
CGROUPS = "cgroups"  # in a box's folder: its cgroup folders, while it has them
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
# the usual links into it; a user namespace that cannot make another.
SYSTEM = ["--unshare-all", "--unshare-user", "--disable-userns", "--ro-bind", "/usr", "/usr"] + [
    arg
    for name in ("lib", "lib64", "bin", "sbin")
    for arg in ("--symlink", f"usr/{name}", f"/{name}")
]
UNAVAILABLE = (
    "the sandbox for generated code cannot start ({why}). Install bubblewrap (`apt-get install "
    "bubblewrap`, or scripts/ensure_packages.sh as root) and allow user namespaces (sysctl user.max_user_namespaces > "
    "0; kernel.unprivileged_userns_clone=1 on older Debian; "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04); run the worker as root "
    "(it mounts each box's bounded tmpfs and makes its cgroup, then drops to a uid of the box's "
    "own) on a host with the cgroup memory and pids controllers. AMTP does not run "
    "generated code outside it unless an operator sets AMTP_VERIFY_UNSANDBOXED=true"
)
OUTPUT_CAP = "stopped: the tests printed more than {limit} (the output cap)"
DISK_CAP = "stopped: the box filled its {limit} of writable space (the disk cap)"
INODE_CAP = "stopped: the box made {limit} files and folders (the inode cap)"
MEMORY_CAP = "stopped: the box needed more than {limit} of memory (the memory cap)"
PROCESS_CAP = "stopped: the box started more than {limit} processes and threads (the process cap)"
WALL_CAP = "stopped: still running after {limit:.0f} s (the wall-time cap)"


@dataclass(frozen=True)
class Limits:
    memory_bytes: int  # per process: RLIMIT_DATA (Chromium reserves far more address space)
    processes: int  # RLIMIT_NPROC of the box's own uid
    file_bytes: int  # RLIMIT_FSIZE: one file, the output file included
    open_files: int
    cpu_s: int  # per process
    output_bytes: int
    disk_bytes: int  # the box's tmpfs: /sandbox, /tmp and /dev/shm together
    disk_inodes: int  # files and folders in that tmpfs
    box_memory_bytes: int  # the box's cgroup: every process and every tmpfs page it writes
    box_processes: int  # the box's cgroup: processes and threads

    @classmethod
    def from_settings(cls) -> Limits:
        return from_settings(cls, "AMTP_SANDBOX_")  # AMTP_SANDBOX_MEMORY_BYTES, …


def sandboxed() -> bool:
    """Whether generated code runs in the box (False only by the operator's explicit override)."""
    return not settings.AMTP_VERIFY_UNSANDBOXED


@functools.cache
def _unavailable() -> str:
    if shutil.which("bwrap") is None:
        return "bwrap is not installed"
    if os.geteuid() != 0:
        return "the worker is not root"
    try:
        Cgroup(
            f"probe-{secrets.token_hex(4)}", settings.AMTP_SANDBOX_CGROUP_PARENT, 1 << 30, 64
        ).remove()
    except CgroupUnavailable as exc:
        return f"no cgroup for the box: {exc}"
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
    peak_memory: int = 0  # the box's cgroup's high-water mark (0 unsandboxed)


class Box:
    """One execution's directory: ``fs/`` (the box's bounded tmpfs: ``work/``, ``tmp/``,
    ``shm/``), ``proxy/`` (the proxy's socket) and the output. ``limits`` (the settings by
    default) sizes the tmpfs; ``run`` takes the rest of them."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits.from_settings()
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.root.chmod(0o711)  # the box's uid passes through, lists nothing
        (self.root / OWNER).write_text(process_id(os.getpid()))  # for sweep()
        self.fs = self.root / "fs"
        self.fs.mkdir(mode=0o711)
        self.mounted = False
        self.cgroup: Cgroup | None = None  # while a command runs (or a started server)
        self.verdict_fd: int | None = None  # run()'s, while it runs
        if sandboxed():
            self._mount()
        self.work = self.fs / "work"
        self.work.mkdir(mode=0o700)
        self.proxy_dir = self.root / "proxy"
        self.proxy_dir.mkdir(mode=0o700)  # only the box's uid (and root) may reach the socket
        self.socket = self.proxy_dir / "proxy.sock"
        self.output = self.root / "output.log"
        self.user = _as_own_user(secrets.randbelow(UID_RANGE[1] - UID_RANGE[0]))
        self.entry = self.root / "entry.mjs"
        self.runner_script = self.root / "runner.mjs"
        for source, copy in ((ENTRY, self.entry), (RUNNER, self.runner_script)):
            shutil.copyfile(source, copy)
            copy.chmod(0o644)

    def _mount(self) -> None:
        size, inodes = self.limits.disk_bytes, self.limits.disk_inodes
        try:
            _mount_tmpfs(self.fs, f"size={size},nr_inodes={inodes},mode=0711")
        except OSError as exc:
            self.remove()
            why = f"cannot mount the box's tmpfs: {exc.strerror}"
            raise SandboxUnavailable(UNAVAILABLE.format(why=why)) from None
        self.mounted = True
        for name in ("tmp", "shm"):
            (self.fs / name).mkdir(mode=0o700)

    @property
    def playwright_runner(self) -> list[str]:
        """How the code starts ``runner.mjs`` (read-only, outside ``work/``): in the box, from the
        execute-only copy of node (:func:`sealed_node`)."""
        if sandboxed():
            return [INSIDE_SEALED_NODE, INSIDE_RUNNER_SCRIPT]
        return ["node", str(self.runner_script)]

    @property
    def code_dir(self) -> str:
        """``work/`` as the code sees it."""
        return str(INSIDE) if sandboxed() else str(self.work)

    def runner_modules(self, modules: Path) -> str:
        """The runner's ``node_modules`` as the code sees it (mounted read-only in the box)."""
        return INSIDE_RUNNER if sandboxed() else str(modules)

    def outside(self, path: str) -> Path:
        """Where a path the code named (``/sandbox/...`` in the box) lies for the worker."""
        if sandboxed() and Path(path).is_relative_to(INSIDE):
            return self.work / Path(path).relative_to(INSIDE)
        return Path(path)

    def hand_over(self) -> None:
        """Give the box's folders to its uid (after the worker wrote the inputs)."""
        if self.user:
            owned = [self.fs / "tmp", self.fs / "shm", self.proxy_dir, self.socket]
            for path in [*owned, self.work, *self.work.rglob("*")]:
                with contextlib.suppress(FileNotFoundError):
                    os.lchown(path, self.user["user"], self.user["group"])

    def remove(self) -> None:
        self._release()
        if self.mounted:
            _libc.umount2(os.fsencode(self.fs), MNT_DETACH)  # lazily: a straggler's file held open
            self.mounted = False
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
        the write end of the verdict's pipe, handed to the command alone (entry.mjs) and
        closed here once the box holds it."""
        if verdict_fd is not None:
            env = {**env, "AMTP_VERDICT_FD": str(verdict_fd)}
        self.verdict_fd = verdict_fd
        try:
            process = self.start(command, env=env, runner=runner, limits=limits)
            return self._watch(process, limits, wall_s, self.cgroup)
        finally:
            self._release()
            if verdict_fd is not None:  # the box's copy is the pipe's only write end now
                with contextlib.suppress(OSError):
                    os.close(verdict_fd)
                self.verdict_fd = None

    def start(self, command: list[str], *, env: dict, runner: Path, limits: Limits):
        """Start ``command`` in the box, in the box's cgroup, and return its process at once
        (a server the caller watches, then ends with :func:`stop`; :meth:`remove` gives its
        cgroup back)."""
        self.hand_over()
        if not sandboxed():
            return self._spawn([], command, env, limits)
        self.cgroup = _cgroup(limits)
        (self.root / CGROUPS).write_text("\n".join(str(d) for d in self.cgroup.dirs))
        fds = [
            os.open(runner, os.O_PATH | os.O_DIRECTORY),
            os.open(self.proxy_dir, os.O_PATH | os.O_DIRECTORY),
            seccomp.memfd(),
        ]
        try:
            return self._spawn(fds, command, env, limits)
        except BaseException:
            self._release()
            raise
        finally:
            for fd in fds:
                os.close(fd)

    def _release(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def _spawn(self, fds, command, env, limits) -> subprocess.Popen:
        argv = self._argv(command, *fds) if fds else self._direct(command)
        prefix = ["/usr/bin/prlimit", *_rlimits(limits), "--"]
        group = self.cgroup if fds else None
        if self.user and group is not None:  # root joins the cgroup, then becomes the box's uid
            uid, gid = self.user["user"], self.user["group"]
            prefix = [
                "/usr/bin/setpriv",
                f"--reuid={uid}",
                f"--regid={gid}",
                "--clear-groups",
                "--",
                *prefix,
            ]
        if group is not None:
            prefix = [*group.enter_argv(), *prefix]
        with self.output.open("ab") as out:
            return subprocess.Popen(
                [*prefix, *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                # bwrap hands its own environment on: not as --setenv arguments, which
                # every user of the host may read (/proc/<pid>/cmdline; a login password)
                env=env,
                cwd=self.work,
                start_new_session=True,
                pass_fds=(*fds, *([self.verdict_fd] if self.verdict_fd is not None else [])),
                **({} if cgroup is not None else self.user),
            )

    def _direct(self, command: list[str]) -> list[str]:
        return ["node", str(self.entry), str(self.socket), str(BRIDGE_PORT), *command]

    def _argv(self, command: list[str], runner_fd: int, proxy_fd: int, seccomp_fd: int):
        argv = ["bwrap", *SYSTEM, "--die-with-parent", "--new-session"]
        for name in ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        # all the box may write: one tmpfs, bounded in bytes and inodes, charged to its cgroup
        argv += ["--bind", str(self.fs / "shm"), "/dev/shm", "--bind", str(self.fs / "tmp"), "/tmp"]
        argv += ["--bind", str(self.work), str(INSIDE), "--chdir", str(INSIDE)]
        argv += ["--ro-bind-fd", str(runner_fd), INSIDE_RUNNER]
        argv += ["--ro-bind", str(self.entry), INSIDE_ENTRY]
        argv += ["--ro-bind", str(self.runner_script), INSIDE_RUNNER_SCRIPT]
        argv += ["--ro-bind", str(sealed_node()), INSIDE_SEALED_NODE]
        # read-only (connect() needs no write access to the folder) and no path in the argv
        argv += ["--ro-bind-fd", str(proxy_fd), INSIDE_PROXY]
        # the tmpfs bubblewrap makes for / and /dev (unbounded) become read-only: only fs/ is left
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--seccomp", str(seccomp_fd)]
        socket = f"{INSIDE_PROXY}/{self.socket.name}"
        return [*argv, _node(), INSIDE_ENTRY, socket, str(BRIDGE_PORT), *command]

    def _watch(self, process, limits: Limits, wall_s: float, cgroup: Cgroup | None) -> Outcome:
        started = time.monotonic()
        stopped = ""
        while not stopped:
            stopped = self._over(limits, cgroup, time.monotonic() - started, wall_s)
            if stopped or process.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(POLL_S)  # returns the moment the box ends
        _kill(process)  # whatever it left behind: the PID namespace dies with it
        peak = 0
        if cgroup is not None:
            cgroup.kill()
            # a cap hit in the box's last moment still names the reason
            stopped = stopped or self._over(limits, cgroup, 0, wall_s)
            peak = cgroup.peak_memory()
        return Outcome(process.returncode, stopped, peak)

    def _over(self, limits: Limits, cgroup: Cgroup | None, elapsed: float, wall_s: float) -> str:
        """Why the box must stop now ("" while within every limit)."""
        if elapsed > wall_s:
            return WALL_CAP.format(limit=wall_s)
        if _size(self.output) > limits.output_bytes:
            return OUTPUT_CAP.format(limit=_mib(limits.output_bytes))
        if cgroup is None:
            return ""
        if cgroup.memory_hit():
            return MEMORY_CAP.format(limit=_mib(limits.box_memory_bytes))
        if cgroup.pids_hit():
            return PROCESS_CAP.format(limit=limits.box_processes)
        space = os.statvfs(self.fs)
        if space.f_bavail == 0:
            return DISK_CAP.format(limit=_mib(self.limits.disk_bytes))
        if space.f_favail == 0:
            return INODE_CAP.format(limit=self.limits.disk_inodes)
        return ""

    def output_tail(self, limit: int) -> str:
        """The last ``limit`` bytes of the output, decoded (never the whole file)."""
        with contextlib.suppress(OSError), self.output.open("rb") as out:
            out.seek(max(0, _size(self.output) - limit))
            return out.read(limit).decode("utf-8", "replace")
        return ""


def process_id(pid: int) -> str:
    """``pid`` and its start time (field 22 of /proc/<pid>/stat): one process, even once its
    pid is reused ("" when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return f"{pid} {stat.rpartition(')')[2].split()[19]}"


def sweep() -> list[Path]:
    """Remove the boxes whose maker is gone: a worker killed with SIGKILL never ran their
    ``remove`` (its box processes died with it: ``--die-with-parent``, the PID namespace), so
    its tmpfs mounts, cgroups and folders are left. A worker calls this as it starts; the
    boxes of any process still running (another worker's) are left alone. The removed ones."""
    removed = []
    for root in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            owner = (root / OWNER).read_text()
            pid = int(owner.split()[0])
        except (OSError, ValueError, IndexError):
            continue  # not a box, or one being made this moment
        if process_id(pid) == owner:
            continue
        with contextlib.suppress(OSError):
            # Its processes die with the worker, a moment after it: whatever is left is killed.
            cgroup.remove([Path(group) for group in (root / CGROUPS).read_text().split()])
        subprocess.run(["umount", "--lazy", str(root / "fs")], check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed


def _cgroup(limits: Limits) -> Cgroup:
    name = f"box-{secrets.token_hex(8)}"
    try:
        return Cgroup(
            name, settings.AMTP_SANDBOX_CGROUP_PARENT, limits.box_memory_bytes, limits.box_processes
        )
    except CgroupUnavailable as exc:
        raise SandboxUnavailable(UNAVAILABLE.format(why=f"no cgroup for the box: {exc}")) from None


def _node() -> str:
    node = os.path.realpath(shutil.which("node") or "/usr/bin/node")
    if not node.startswith("/usr/"):
        raise SandboxUnavailable(
            UNAVAILABLE.format(why=f"node at {node} is outside /usr, which the box mounts")
        )
    return node


# mount(2) and umount2(2) called directly: the mount(8) and umount(8) commands cost two process
# starts per box (about 50 ms on a loaded machine, scripts/bench_sandbox.py)
_libc = ctypes.CDLL(None, use_errno=True)
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2  # <sys/mount.h>


def _mount_tmpfs(path: Path, options: str) -> None:
    flags = MS_NOSUID | MS_NODEV
    if _libc.mount(b"amtp-box", os.fsencode(path), b"tmpfs", flags, options.encode()) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(path))


_sealed: list[Path] = []  # the copy, once made
_sealing = threading.Lock()


def sealed_node() -> Path:
    """An execute-only copy of node (root's, mode 0111), made once per worker process (again if
    something removed it). The kernel marks a process that executes a file it may not read
    non-dumpable (``would_dump`` in fs/exec.c): its ``/proc/<pid>`` files become root's, and
    ptrace access to it (opening its ``fd/*``, reading or writing its ``mem``) needs
    ``CAP_SYS_PTRACE``, which no process in the box has (ptrace(2), "Ptrace access mode
    checking"). Node cannot call ``prctl(PR_SET_DUMPABLE, 0)`` itself; this is the same effect
    without native code."""
    with _sealing:
        if not (_sealed and _sealed[0].is_file()):
            folder = Path(tempfile.mkdtemp(prefix="amtp-node-"))
            folder.chmod(0o711)
            atexit.register(shutil.rmtree, folder, True)
            copy = folder / "node"
            shutil.copyfile(_node(), copy)
            copy.chmod(0o111)
            _sealed[:] = [copy]
        return _sealed[0]


def _rlimits(limits: Limits) -> list[str]:
    return [
        f"--data={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        f"--cpu={limits.cpu_s}",
        "--core=0",
    ]


def stop(process: subprocess.Popen) -> None:
    """End a box started with :meth:`Box.start`: its session, and so its PID namespace."""
    _kill(process)


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


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.0f} MiB"
